package serve

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

// discover loads the bundles under --bundles fail-soft (§1.5 step 9, §6.5)
// and returns the workflows in discovery order plus the number that could
// not be loaded. Listing uses the content-verified level; a run re-verifies
// its own bundle fully ([Server.verifyForRun]).
func (s *Server) discover() ([]*workflow, int) {
	root, err := filepath.Abs(s.opts.Bundles)
	if err != nil {
		root = s.opts.Bundles
	}
	var key string
	useCache := !s.opts.AllowProtectedExport
	if useCache {
		key, useCache = rootKey(root)
	}
	var ws []*workflow
	if useCache {
		ws = s.loadCache(key)
	}
	if ws == nil {
		bs, err := bundle.Discover(root, s.bundleOpts(bundle.Metadata)...)
		if err != nil {
			fmt.Fprintln(s.stderr, "serve: the bundles directory could not be read; no workflows are served")
			return nil, 0
		}
		ws = make([]*workflow, 0, len(bs))
		for _, b := range bs {
			ws = append(ws, s.fromBundle(b))
		}
		if useCache {
			s.storeCache(key, ws)
		}
	}
	failed := 0
	for _, w := range ws {
		if !w.available {
			failed++
			if s.opts.AllowProtectedExport && w.loadErr != nil {
				fmt.Fprintf(s.stderr, "serve: workflow %s could not be loaded (%s): %s\n", w.id, w.errClass, oneLine(*w.loadErr))
			} else {
				fmt.Fprintf(s.stderr, "serve: workflow %s could not be loaded (%s)\n", w.id, w.errClass)
			}
		}
	}
	return ws, failed
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// bundleOpts are the load options: the key comes from the server's
// environment, never from anything a caller sends.
func (s *Server) bundleOpts(level bundle.Level) []bundle.Option {
	opts := []bundle.Option{bundle.WithLevel(level)}
	if k := s.env(bundle.KeyEnv); k != "" {
		opts = append(opts, bundle.WithKey(k))
	} else {
		opts = append(opts, bundle.WithoutKey())
	}
	return opts
}

func (s *Server) env(name string) string {
	v := ""
	for _, kv := range s.opts.Environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// errorClass maps a bundle failure to the local class tokens of §1.2.
func errorClass(b *bundle.Bundle) string {
	if b.Integrity == bundle.LegacyUnverified {
		return "legacy_unverified"
	}
	switch b.ErrorKind {
	case bundle.KindContentDigestMismatch, bundle.KindAssetHashMismatch, bundle.KindAssetMissing:
		return "integrity"
	case bundle.KindDecryptFailed, bundle.KindMissingKey, bundle.KindKDFCostRejected:
		return "decryption"
	case bundle.KindInvalidJSON, bundle.KindNotABundle:
		return "structure"
	default:
		return "io"
	}
}

// fromBundle builds the server's view of one discovered bundle.
func (s *Server) fromBundle(b *bundle.Bundle) *workflow {
	dir, err := filepath.Abs(b.Dir)
	if err != nil {
		dir = b.Dir
	}
	w := &workflow{id: b.ID, baseID: b.BaseID, dir: dir, encrypted: b.Encrypted, slug: filepath.Base(dir)}
	usable := b.Integrity == bundle.Verified || b.Integrity == bundle.ContentVerified
	if !usable {
		w.errClass = errorClass(b)
		if b.Err != nil {
			e := b.Err.Error()
			w.loadErr = &e
		} else {
			e := w.errClass
			w.loadErr = &e
		}
		return w
	}
	w.params = b.DeclaredParams()
	if c := checkParamNames(w.params); c != "" {
		w.errClass = c
		w.loadErr = &c
		w.params = nil
	} else {
		w.available = true
	}
	w.stepCount = b.StepCount
	sv := b.SchemaVersion
	w.schemaVersion = &sv
	w.contentDigest = b.ContentDigest
	if p, err := b.Protected(); err == nil {
		name := p.Name
		w.name = &name
		if p.AgentSlug != "" {
			w.slug = p.AgentSlug
		}
		w.intents = p.StepIntents
		w.recorded = map[string]string{}
		for _, nv := range p.RecordedParams {
			w.recorded[nv.Name] = nv.Value
		}
	}
	return w
}

// verifyForRun fully re-verifies w's bundle at call time (§7.5 "a fresh
// verification of the bundle at this call"). It returns the verified bundle
// digest, or ok false when the bundle no longer fully verifies or changed
// since startup.
func (s *Server) verifyForRun(w *workflow) (string, bool) {
	b, err := bundle.Load(w.dir, s.bundleOpts(bundle.Full)...)
	if err != nil || b == nil || !b.Verified() || b.ContentDigest != w.contentDigest {
		return "", false
	}
	return b.BundleSHA256(), true
}
