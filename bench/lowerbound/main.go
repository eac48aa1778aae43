// Command lowerbound is the physical lower bound of `openadapt-agent bundle
// verify ROOT` (bench/bundle-verify.sh, BENCHMARKS.md): with the same number
// of workers (GOMAXPROCS unless -workers) it reads every regular file of every
// bundle folder under ROOT once (open, fstat, one read of size+1 bytes),
// hashes it with SHA-256, and makes one validating JSON pass over each .json
// file: internal/util/pyjson's tokenizer under Flow's input rules, which is the
// fastest strict check we have (2.2x encoding/json.Valid by CPU time on the
// mockmed workflow.json), so the bound is as tight as it can honestly be.
// It verifies nothing: it is the I/O, hashing and validation any verifier
// must at least do. It prints the number of bundles, files and bytes.
//
// With -stat it is instead the lower bound of a warm `serve` start (the
// digest cache's key, BENCHMARKS.md, area serve at scale): it lists ROOT
// and, on the same number of workers, walks every bundle folder entry by
// entry the way the cache's identity is taken (statwalk_unix.go): no file
// is opened or read, nothing else is done. It prints the number of
// bundles and entries.
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// flow is bundle's input rules (docs/bundle.md, Canonical JSON).
var flow = pyjson.Options{MaxIntDigits: pyjson.PythonIntMaxDigits}

func main() {
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "parallel bundles")
	stat := flag.Bool("stat", false, "only the per-entry stat walk of every bundle folder")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: lowerbound [-workers N] [-stat] ROOT")
		os.Exit(2)
	}
	root := flag.Arg(0)
	ents, err := os.ReadDir(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lowerbound:", err)
		os.Exit(1)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(root, e.Name()))
		}
	}
	sort.Strings(dirs)
	var files, bytes, bad atomic.Int64
	next := atomic.Int64{}
	var wg sync.WaitGroup
	if *stat {
		for range min(*workers, len(dirs)) {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= len(dirs) {
						return
					}
					if n := statWalk(dirs[i]); n < 0 {
						bad.Add(1)
					} else {
						files.Add(int64(n))
					}
				}
			})
		}
		wg.Wait()
		fmt.Printf("lowerbound -stat: %d bundles, %d entries, %d not walked\n", len(dirs), files.Load(), bad.Load())
		if bad.Load() > 0 {
			os.Exit(1)
		}
		return
	}
	for range min(*workers, len(dirs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var doc pyjson.Doc
			for {
				i := int(next.Add(1)) - 1
				if i >= len(dirs) {
					return
				}
				filepath.WalkDir(dirs[i], func(p string, d os.DirEntry, err error) error {
					if err != nil || !d.Type().IsRegular() {
						return nil
					}
					data, err := readOnce(p)
					if err != nil {
						bad.Add(1)
						return nil
					}
					sum := sha256.Sum256(data)
					_ = sum
					if strings.HasSuffix(p, ".json") && doc.Parse(data, flow) != nil {
						bad.Add(1)
					}
					files.Add(1)
					bytes.Add(int64(len(data)))
					return nil
				})
			}
		}()
	}
	wg.Wait()
	fmt.Printf("lowerbound: %d bundles, %d files, %d bytes, %d unreadable or invalid\n", len(dirs), files.Load(), bytes.Load(), bad.Load())
	if bad.Load() > 0 {
		os.Exit(1)
	}
}

// readOnce reads a regular file with one read of its size plus one byte.
func readOnce(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, fi.Size()+1)
	n, err := f.Read(data)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return data[:n], nil
}
