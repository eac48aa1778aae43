package verify_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/release/signing"
	"github.com/OpenAdaptAI/openadapt-agent/internal/release/verify"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// releaseSet writes a small signed release into a new folder: three
// artifacts, checksums.txt, its bundle, and the public key in a separate
// folder (out of band, as a verifier gets it).
type releaseSet struct {
	dir, checksums, bundle, key string
	names                       []string
}

func newReleaseSet(t *testing.T) releaseSet {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]byte{
		"openadapt-agent_1.0.0_linux_amd64.tar.gz":   []byte("archive bytes\x00\x01"),
		"openadapt-agent-mcp_1.0.0_linux_amd64.mcpb": []byte("PK bundle bytes"),
		"openadapt-agent_1.0.0_linux_amd64.cdx.json": []byte(`{"bomFormat":"CycloneDX"}`),
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var sums bytes.Buffer
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), files[n], 0o644); err != nil {
			t.Fatal(err)
		}
		d := sha256.Sum256(files[n])
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(d[:]), n)
	}
	rs := releaseSet{
		dir:       dir,
		checksums: filepath.Join(dir, "checksums.txt"),
		bundle:    filepath.Join(dir, "checksums.txt.sigstore.json"),
		key:       filepath.Join(t.TempDir(), "release.pub"),
		names:     names,
	}
	bj, pub, err := signing.SignWithKey(sums.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for p, b := range map[string][]byte{rs.checksums: sums.Bytes(), rs.bundle: bj, rs.key: pub} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

func (rs releaseSet) options() verify.Options {
	return verify.Options{Sigstore: ledger.SigstoreOptions{BundlePath: rs.bundle, KeyPath: rs.key, InsecureIgnoreTlog: true}}
}

func TestVerifyAccepts(t *testing.T) {
	t.Parallel()
	rs := newReleaseSet(t)
	res, err := verify.Verify(context.Background(), rs.checksums, rs.options())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified || res.MediaType != verify.MediaType || res.Signature == nil || !res.Signature.Verified {
		t.Fatalf("result %+v", res)
	}
	var got []string
	for _, a := range res.Artifacts {
		got = append(got, a.Name+" "+a.Status)
	}
	var want []string
	for _, n := range rs.names {
		want = append(want, n+" ok")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("artifacts (-want +got):\n%s", diff)
	}
	// The document is what --json prints: it must round-trip as JSON.
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyRefusesEveryFlip changes one byte at a time in every artifact,
// in the checksums file, and in the signature and digest fields of the
// bundle; each change must be refused. (CI's release stage runs the same
// over a real release set.)
func TestVerifyRefusesEveryFlip(t *testing.T) {
	t.Parallel()
	rs := newReleaseSet(t)
	ctx := context.Background()
	targets := map[string]error{rs.checksums: verify.ErrSignature}
	for _, n := range rs.names {
		targets[filepath.Join(rs.dir, n)] = verify.ErrDigestMismatch
	}
	for p, want := range targets {
		orig, _ := os.ReadFile(p)
		for i := range orig {
			for _, mask := range []byte{0x01, 0x80} {
				flipped := bytes.Clone(orig)
				flipped[i] ^= mask
				writeFile(t, p, flipped)
				if _, err := verify.Verify(ctx, rs.checksums, rs.options()); !errors.Is(err, want) {
					t.Fatalf("%s byte %d ^%#x: want %v, got %v", filepath.Base(p), i, mask, want, err)
				}
			}
		}
		writeFile(t, p, orig)
	}
	// The bundle: every byte of the base64 signature and digest values.
	orig, _ := os.ReadFile(rs.bundle)
	spans := bundleFieldSpans(t, orig)
	if len(spans) != 2 {
		t.Fatalf("found %d signature/digest fields in the bundle, want 2", len(spans))
	}
	for _, sp := range spans {
		for i := sp[0]; i < sp[1]; i++ {
			for _, mask := range []byte{0x01, 0x02, 0x20} {
				flipped := bytes.Clone(orig)
				flipped[i] ^= mask
				writeFile(t, rs.bundle, flipped)
				if _, err := verify.Verify(ctx, rs.checksums, rs.options()); err == nil {
					t.Fatalf("bundle byte %d (%q→%q) accepted", i, orig[i], flipped[i])
				}
			}
		}
	}
	writeFile(t, rs.bundle, orig)
	if _, err := verify.Verify(ctx, rs.checksums, rs.options()); err != nil {
		t.Fatalf("restored set: %v", err)
	}
}

// bundleFieldSpans returns the byte ranges of the messageSignature's
// signature and digest string values in a bundle's JSON.
func bundleFieldSpans(t *testing.T, b []byte) [][2]int {
	t.Helper()
	var spans [][2]int
	for _, key := range []string{`"signature":`, `"digest":`} {
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			t.Fatalf("no %s in bundle", key)
		}
		start := i + len(key) + bytes.IndexByte(b[i+len(key):], '"') + 1
		end := start + bytes.IndexByte(b[start:], '"')
		spans = append(spans, [2]int{start, end})
	}
	return spans
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyPaddingBits: a digest whose last base64 character differs only
// in padding bits decodes to the same bytes; it is refused all the same.
func TestVerifyPaddingBits(t *testing.T) {
	t.Parallel()
	rs := newReleaseSet(t)
	orig, _ := os.ReadFile(rs.bundle)
	sp := bundleFieldSpans(t, orig)[1] // the digest: 32 bytes, 44 chars, one '='
	last := sp[1] - 2                  // the character before '='
	if orig[sp[1]-1] != '=' {
		t.Fatalf("digest %q does not end in one '='", orig[sp[0]:sp[1]])
	}
	flipped := bytes.Clone(orig)
	flipped[last] ^= 0x01 // the lowest of the two padding bits in this position
	writeFile(t, rs.bundle, flipped)
	_, err := verify.Verify(context.Background(), rs.checksums, rs.options())
	if !errors.Is(err, verify.ErrSignature) || !strings.Contains(err.Error(), "canonical base64") {
		t.Fatalf("want a refusal naming the encoding, got %v", err)
	}
}

func TestVerifyMissingArtifact(t *testing.T) {
	t.Parallel()
	rs := newReleaseSet(t)
	gone := filepath.Join(rs.dir, rs.names[1])
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	res, err := verify.Verify(context.Background(), rs.checksums, rs.options())
	if !errors.Is(err, verify.ErrMissing) || res == nil {
		t.Fatalf("want ErrMissing with a result, got %v", err)
	}
	if res.Verified || res.Artifacts[1].Status != verify.StatusMissing || res.Artifacts[0].Status != verify.StatusOK {
		t.Errorf("artifacts %+v", res.Artifacts)
	}
	// A symbolic link in its place is not followed.
	if err := os.Symlink(filepath.Join(rs.dir, rs.names[0]), gone); err != nil {
		t.Fatal(err)
	}
	if _, err := verify.Verify(context.Background(), rs.checksums, rs.options()); !errors.Is(err, verify.ErrMissing) {
		t.Fatalf("symlink: want ErrMissing, got %v", err)
	}
}

func TestVerifyIgnoreMissing(t *testing.T) {
	t.Parallel()
	rs := newReleaseSet(t)
	o := rs.options()
	o.IgnoreMissing = true
	for _, n := range rs.names[1:] {
		os.Remove(filepath.Join(rs.dir, n))
	}
	res, err := verify.Verify(context.Background(), rs.checksums, o)
	if err != nil || !res.Verified {
		t.Fatalf("one artifact present: %v", err)
	}
	if res.Artifacts[0].Status != verify.StatusOK || res.Artifacts[1].Status != verify.StatusSkipped {
		t.Errorf("artifacts %+v", res.Artifacts)
	}
	// A changed artifact is still refused, and so is a folder with none.
	writeFile(t, filepath.Join(rs.dir, rs.names[1]), []byte("changed"))
	if _, err := verify.Verify(context.Background(), rs.checksums, o); !errors.Is(err, verify.ErrDigestMismatch) {
		t.Fatalf("want ErrDigestMismatch, got %v", err)
	}
	os.Remove(filepath.Join(rs.dir, rs.names[0]))
	os.Remove(filepath.Join(rs.dir, rs.names[1]))
	if _, err := verify.Verify(context.Background(), rs.checksums, o); !errors.Is(err, verify.ErrMissing) {
		t.Fatalf("no artifact: want ErrMissing, got %v", err)
	}
}

func TestVerifyOtherKey(t *testing.T) {
	t.Parallel()
	rs := newReleaseSet(t)
	other := newReleaseSet(t)
	o := rs.options()
	o.Sigstore.KeyPath = other.key
	if _, err := verify.Verify(context.Background(), rs.checksums, o); !errors.Is(err, verify.ErrSignature) {
		t.Fatalf("want ErrSignature, got %v", err)
	}
}

func TestVerifyOptions(t *testing.T) {
	t.Parallel()
	rs := newReleaseSet(t)
	for name, o := range map[string]ledger.SigstoreOptions{
		"no bundle":            {KeyPath: rs.key, InsecureIgnoreTlog: true},
		"no key nor root":      {BundlePath: rs.bundle},
		"key and identity":     {BundlePath: rs.bundle, KeyPath: rs.key, CertificateIdentity: "x"},
		"no tlog not accepted": {BundlePath: rs.bundle, KeyPath: rs.key},
	} {
		if _, err := verify.Verify(context.Background(), rs.checksums, verify.Options{Sigstore: o}); !errors.Is(err, ledger.ErrOption) {
			t.Errorf("%s: want ErrOption, got %v", name, err)
		}
	}
}

func TestParseChecksums(t *testing.T) {
	t.Parallel()
	h := strings.Repeat("ab", 32)
	good := h + "  a.tar.gz\n" + h + "  b.mcpb\n"
	got, err := verify.ParseChecksums([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]verify.Entry{{h, "a.tar.gz"}, {h, "b.mcpb"}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for name, in := range map[string]string{
		"empty":           "",
		"no final LF":     h + "  a",
		"upper hex":       strings.ToUpper(h) + "  a\n",
		"short hex":       h[:62] + "  a\n",
		"one space":       h + " a\n",
		"binary marker":   h + " *a\n",
		"folder":          h + "  dir/a\n",
		"backslash":       h + "  dir\\a\n",
		"dot dot":         h + "  ..\n",
		"control":         h + "  a\tb\n",
		"CRLF":            h + "  a\r\n",
		"leading space":   h + "   a\n",
		"duplicate":       h + "  a\n" + h + "  a\n",
		"blank line":      h + "  a\n\n",
		"not UTF-8":       h + "  \xff\n",
		"drive separator": h + "  c:a\n",
	} {
		if _, err := verify.ParseChecksums([]byte(in)); !errors.Is(err, verify.ErrChecksums) {
			t.Errorf("%s: want ErrChecksums, got %v", name, err)
		}
	}
}

func FuzzParseChecksums(f *testing.F) {
	f.Add([]byte(strings.Repeat("0", 64) + "  a\n"))
	f.Add([]byte("x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := verify.ParseChecksums(b)
		if err != nil {
			return
		}
		// Round trip: what parses is exactly the file GoReleaser writes.
		var out bytes.Buffer
		for _, e := range entries {
			fmt.Fprintf(&out, "%s  %s\n", e.SHA256, e.Name)
		}
		if !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("round trip changed %q to %q", b, out.Bytes())
		}
	})
}
