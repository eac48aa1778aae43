package mailbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No production code opens a listener (docs/mailbox.md: the client only makes
// outbound requests; the project opens no HTTP listener anywhere). Test
// support under internal/testing/ and _test.go files may.
func TestNoListenerInProductionCode(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	forbidden := []string{"net.Listen(", "net.ListenTCP(", "net.ListenUDP(", "ListenAndServe", "http.Serve(", "(&http.Server{", "http.Server{", `"net/http/httptest"`, "ListenConfig{"}
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", ".git", "testing", "bench":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		for _, f := range forbidden {
			if strings.Contains(string(src), f) {
				t.Errorf("%s contains %s: production code must not listen", p, f)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("scanned only %d files: the walk is broken", n)
	}
}
