package cmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// skillVerificationMediaType identifies the `skill verify --json` document.
const skillVerificationMediaType = "application/vnd.openadapt-agent.skill-verification+json;version=1"

func newSkillVerifyCmd(io *IO) *cobra.Command {
	var (
		sig    sigFlags
		sha    string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "verify FILE",
		Short: "Verify a packed skill: digests, archive safety, SKILL.md and an optional signature",
		Long: `Verify a packed skill (.skill/.zip or .tar.zst; the format comes from its magic
bytes) without writing anything. The archive sha256 must match --sha256, or
the FILE.sha256 sidecar when present; every entry must be a regular file or
folder under one top folder (no traversal, absolute paths, links, devices or
duplicates); size and compression-ratio limits stop decompression bombs (the
error names the limit hit); SKILL.md must pass the Agent Skills rules; and
SHA256SUMS must match every file.

With --bundle, a detached Sigstore bundle over the archive bytes (for example
from cosign sign-blob --bundle) is verified offline with --trusted-root or
--key and the same flags as ledger verify.`,
		Example: `  openadapt-agent skill verify demo.skill
  openadapt-agent skill verify demo.skill --sha256 sha256:<hex>
  openadapt-agent skill verify demo.skill --bundle demo.skill.sigstore.json \
      --trusted-root trusted_root.json \
      --certificate-identity you@example.com --certificate-oidc-issuer https://accounts.google.com`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			so, err := sig.options()
			if err != nil {
				return fmt.Errorf("skill verify: %w", err)
			}
			if err := operandError(file, false, true); err != nil {
				return fmt.Errorf("skill verify: %w", err)
			}
			res, err := skill.VerifyArchive(file, skill.VerifyOptions{SHA256: sha, Context: cmd.Context()})
			if err != nil {
				err = fmt.Errorf("skill verify: %w", err)
				if errors.Is(err, skill.ErrOption) {
					return usageError(err)
				}
				return err
			}
			var sigRes *ledger.KeylessResult
			if sig.set() {
				// The signature covers exactly the bytes whose digest was
				// just verified: read them once and check both agree.
				data, err := fsutil.ReadFile(cmd.Context(), file, fsutil.Archive)
				if err != nil {
					return withCode(codeOperandUnreadable, fmt.Errorf("skill verify: %w", err))
				}
				if d := sha256.Sum256(data); !bytes.Equal(d[:], mustHex(res.SHA256)) {
					return fmt.Errorf("skill verify: %w: the archive changed while it was verified", skill.ErrDigestMismatch)
				}
				sigRes, err = ledger.VerifyArtifact(cmd.Context(), ledger.ArtifactBytes(data), so)
				if err != nil {
					return fmt.Errorf("skill verify: signature: %w", sigstoreError(err))
				}
			}
			if asJSON {
				return writeJSON(io.Out, struct {
					MediaType  string                `json:"mediaType"`
					Archive    string                `json:"archive"`
					SHA256     string                `json:"sha256"`
					TreeDigest string                `json:"tree_digest"`
					Name       string                `json:"name"`
					DigestFrom *string               `json:"digest_checked_against"`
					Signature  *ledger.KeylessResult `json:"signature"`
				}{skillVerificationMediaType, file, "sha256:" + res.SHA256, res.TreeDigest, res.Name, nullable(res.DigestSource), sigRes})
			}
			// "ok" only when the digest was compared with an expected value
			// (--sha256 or the sidecar); otherwise say that it was not.
			if res.DigestSource == "" {
				fmt.Fprintf(io.Out, "archive sha256:%s (not compared: no --sha256 and no %s.sha256 sidecar)\n", res.SHA256, displayPath(filepath.Base(file)))
			} else {
				fmt.Fprintf(io.Out, "ok archive sha256:%s (matches the %s)\n", res.SHA256, map[string]string{"flag": "--sha256 value", "sidecar": "sidecar"}[res.DigestSource])
			}
			fmt.Fprintf(io.Out, "ok files %d %s\n", res.Files, res.TreeDigest)
			fmt.Fprintf(io.Out, "ok skill %s\n", res.Name)
			switch {
			case sigRes == nil:
				fmt.Fprintln(io.Out, "signature: not checked (integrity only)")
			case sigRes.Signer != nil:
				fmt.Fprintf(io.Out, "ok signature %s (%s)\n", sigRes.Signer.SAN, sigRes.Signer.Issuer)
			case sigRes.KeyHint != nil:
				fmt.Fprintf(io.Out, "ok signature key %s\n", *sigRes.KeyHint)
			default:
				fmt.Fprintln(io.Out, "ok signature key")
			}
			return nil
		},
	}
	f := c.Flags()
	sig.bind(f, "detached Sigstore bundle over the archive (e.g. cosign sign-blob --bundle)")
	f.StringVar(&sha, "sha256", "", "expected archive sha256 (hex or sha256:<hex>); default: the FILE.sha256 sidecar")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	addQuietFlag(c)
	return c
}

func mustHex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}
