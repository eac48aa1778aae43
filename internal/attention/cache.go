package attention

import (
	"os"
	"sync"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

// Flow writes report.json once, atomically (temp file + rename), so a
// report is identified by its file: the projector caches the facts of each
// report it validated, keyed by path and checked against the file's
// identity, size and modification time on every use. A changed or replaced
// file is re-read. The cache is process-wide and bounded.
var reportCache = struct {
	sync.Mutex
	m map[string]cachedFacts
}{m: map[string]cachedFacts{}}

// maxCached bounds the cache; past it the cache starts over.
const maxCached = 20000

type cachedFacts struct {
	fi    os.FileInfo
	size  int64
	mtime time.Time
	facts *reportFacts // nil: the report is not valid
}

// loadReportFacts returns the facts of a valid report.json at path, or nil
// when it is absent, unreadable, unsafe or invalid.
func loadReportFacts(path string) *reportFacts {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	reportCache.Lock()
	c, ok := reportCache.m[path]
	reportCache.Unlock()
	if ok && os.SameFile(c.fi, fi) && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) {
		return c.facts
	}
	data, fi, err := readRegularInfo(path, maxReport)
	if err != nil {
		return nil
	}
	var facts *reportFacts
	if obj, ok := flowrun.ParseObject(data); ok && flowrun.CheckReportObject(obj) == nil {
		facts = factsOf(obj)
	}
	reportCache.Lock()
	if len(reportCache.m) >= maxCached {
		reportCache.m = map[string]cachedFacts{}
	}
	reportCache.m[path] = cachedFacts{fi: fi, size: fi.Size(), mtime: fi.ModTime(), facts: facts}
	reportCache.Unlock()
	return facts
}
