package flowhelper

import (
	"context"
	"encoding/json"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// The durable-authority database (docs/helper.md, "Process model"): only the
// journal that holds a run's pause binding accepts decisions on it, so run
// children, the helper and the terminal `attention` command must all give
// Flow the same one. serve records the path it gave Flow in its state
// directory; `attention` reads it and passes the same path.

// AuthorityDBEnv is Flow's variable naming the database.
const AuthorityDBEnv = "OPENADAPT_DURABLE_AUTHORITY_DB"

// AuthorityFile is the record's name inside the state directory.
const AuthorityFile = "authority.json"

// AuthorityDB is the database Flow 1.32 uses with the child environment env
// and working directory dir (runtime/durable/authority.py
// _default_db_path): OPENADAPT_DURABLE_AUTHORITY_DB, "~" expanded and made
// absolute lexically (never resolved), else
// HOME/.openadapt/durable-authority/authority.sqlite3 (the account's home
// folder without HOME). "" when it cannot be known.
func AuthorityDB(env []string, dir string) string {
	home := flowrun.EnvValue(env, "HOME")
	if home == "" {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir
		}
	}
	if p := flowrun.EnvValue(env, AuthorityDBEnv); p != "" {
		if p == "~" || strings.HasPrefix(p, "~/") {
			if home == "" {
				return ""
			}
			p = home + p[1:]
		}
		if !filepath.IsAbs(p) {
			if dir == "" {
				return ""
			}
			p = filepath.Join(dir, p)
		}
		return filepath.Clean(p)
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".openadapt", "durable-authority", "authority.sqlite3")
}

// authorityRecord is <state>/authority.json.
type authorityRecord struct {
	AuthorityDB string `json:"authority_db"`
}

// WriteAuthorityRecord records path in stateDir (0600, all-or-nothing, no
// link followed).
func WriteAuthorityRecord(stateDir, path string) error {
	b, _ := json.Marshal(authorityRecord{AuthorityDB: path})
	return fsutil.WriteFile(filepath.Join(stateDir, AuthorityFile), append(b, '\n'), 0o600)
}

// ReadAuthorityRecord returns the recorded path, or "" when there is no
// usable record (absent, a link, oversized, malformed, not absolute, or
// not this user's own file: one planted before the folder was made
// private is never adopted).
func ReadAuthorityRecord(ctx context.Context, stateDir string) string {
	data, err := fsutil.ReadOurs(ctx, filepath.Join(stateDir, AuthorityFile), fsutil.Limit{Kind: "authority record", Max: 64 << 10})
	if err != nil {
		return ""
	}
	obj, err := parseObject(data)
	if err != nil {
		return ""
	}
	p, ok := obj.str("authority_db")
	if !ok || !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return ""
	}
	return p
}

// WithAuthorityDB returns env with OPENADAPT_DURABLE_AUTHORITY_DB set to
// path (replacing any value).
func WithAuthorityDB(env []string, path string) []string {
	return append(flowrun.EnvWithout(env, AuthorityDBEnv), AuthorityDBEnv+"="+path)
}
