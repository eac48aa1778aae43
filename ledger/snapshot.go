package ledger

import (
	"embed"
	"io/fs"
)

// SnapshotDate is the date of the embedded snapshot of OpenAdapt's published
// ledgers (see SNAPSHOT-SOURCE.md beside this file).
const SnapshotDate = "2026-09-02"

// snapshotFS is a byte-exact copy of OpenAdapt's public evidence root as of
// SnapshotDate: the evidence registry (revision 3), the workflow ledger, the
// public projections, 15 objects and bundles, and the signer registry.
//
//go:embed snapshot
var snapshotFS embed.FS

func snapshotRoot() fs.FS {
	sub, err := fs.Sub(snapshotFS, "snapshot")
	if err != nil {
		panic("ledger: embedded snapshot missing: " + err.Error())
	}
	return sub
}

// SnapshotFS returns the embedded snapshot as a read-only evidence root.
func SnapshotFS() fs.FS { return snapshotRoot() }
