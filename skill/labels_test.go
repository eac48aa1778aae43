//go:build unix

package skill

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLabelsStarterBytes(t *testing.T) {
	got := string(LabelsStarter([]string{"workflow_bbbbbbbbbbbbbbbbbbbbbbbb", "workflow_0123456789abcdef01234567", "workflow_bbbbbbbbbbbbbbbbbbbbbbbb"}))
	want := `{
  "mediaType": "application/vnd.openadapt.agent.labels+json;version=1",
  "workflows": {
    "workflow_0123456789abcdef01234567": {"label": "", "description": ""},
    "workflow_bbbbbbbbbbbbbbbbbbbbbbbb": {"label": "", "description": ""}
  }
}
`
	if got != want {
		t.Fatalf("starter:\n%s\nwant:\n%s", got, want)
	}
	var doc struct {
		MediaType string                       `json:"mediaType"`
		Workflows map[string]map[string]string `json:"workflows"`
	}
	if err := json.Unmarshal([]byte(got), &doc); err != nil || doc.MediaType != LabelsMediaType || len(doc.Workflows) != 2 {
		t.Fatalf("parsed %+v %v", doc, err)
	}
	if string(LabelsStarter(nil)) != "{\n  \"mediaType\": \"application/vnd.openadapt.agent.labels+json;version=1\",\n  \"workflows\": {}\n}\n" {
		t.Fatalf("empty starter %q", LabelsStarter(nil))
	}
}

// TestWriteLabelsStarter: an existing file (or a link) is refused without
// force; with force a link at the path is replaced, its target untouched;
// a missing folder is an ErrPath.
func TestWriteLabelsStarter(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "labels.json")
	ids := []string{"workflow_0123456789abcdef01234567"}
	if err := WriteLabelsStarter(p, ids, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteLabelsStarter(p, ids, false); !errors.Is(err, ErrConflict) {
		t.Fatalf("existing: %v", err)
	}
	outside := filepath.Join(t.TempDir(), "target.json")
	os.WriteFile(outside, []byte("keep"), 0o644)
	os.Remove(p)
	os.Symlink(outside, p)
	if err := WriteLabelsStarter(p, ids, false); !errors.Is(err, ErrConflict) {
		t.Fatalf("link without force: %v", err)
	}
	if err := WriteLabelsStarter(p, ids, true); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(p); fi.Mode()&os.ModeSymlink != 0 {
		t.Fatal("the link was followed, not replaced")
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Fatal("the link's target was written")
	}
	if b, _ := os.ReadFile(p); string(b) != string(LabelsStarter(ids)) {
		t.Fatalf("content %q", b)
	}
	if err := WriteLabelsStarter(filepath.Join(dir, "nope", "l.json"), ids, false); !errors.Is(err, ErrPath) {
		t.Fatalf("missing folder: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left %d entries", len(ents))
	}
}
