package skill

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseSkillFile: any input either fails with a finding or parses into
// a block and a body that partition the file.
func FuzzParseSkillFile(f *testing.F) {
	for _, s := range []string{goodSkill, "---\r\nname: a\r\n---\r\n", "\ufeff---\n", "---\nname: a: b\n---\n", "---\n ---\n---\n", "---\n- x\n---\n"} {
		f.Add([]byte(s))
	}
	if data, err := os.ReadFile(filepath.Join(flowVectors, "skills/unicode-params/berpr-fung-triage-note-a-b-q-end-second-line/SKILL.md")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := ParseSkillFile(data)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(data, []byte("---")) || sf.BodyOffset > len(data) || !bytes.Equal(sf.Body(), data[sf.BodyOffset:]) {
			t.Fatalf("inconsistent split: offset %d of %d", sf.BodyOffset, len(data))
		}
		if !bytes.Contains(data[:sf.BodyOffset], sf.Block) {
			t.Fatal("block is not inside the frontmatter")
		}
	})
}

// FuzzVerifyArchive: mutated archives never panic and never verify without
// a name and files.
func FuzzVerifyArchive(f *testing.F) {
	f.Add(buildTarZst(f, goodMembers()))
	f.Add(buildZip(f, goodMembers(), nil))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "x")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		lim := Limits{MaxArchiveBytes: 1 << 20, MaxEntries: 100, MaxFileBytes: 1 << 20, MaxTotalUnpacked: 4 << 20, MaxRatio: 1000}
		res, err := VerifyArchive(p, VerifyOptions{Limits: &lim})
		if err == nil && (res.Name == "" || res.Files < 2) {
			t.Fatalf("verified without content: %+v", res)
		}
	})
}
