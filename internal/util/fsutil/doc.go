// Package fsutil is the one place this project touches the file system for
// hostile-machine purposes (README "Hostile machine: links, special files
// and size caps"):
//
//   - [Root] writes, renames and deletes beneath a root folder without ever
//     following a symbolic link below it. Every path component is opened
//     with no-follow semantics: openat2(RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH)
//     on Linux, a component-wise openat(O_NOFOLLOW|O_DIRECTORY) walk on other
//     Unix systems (and on Linux kernels without openat2). A symlinked
//     ancestor is refused with a [*LinkError] naming the link, never followed.
//     os.Root alone is not enough: it follows links that stay inside the root.
//   - [ReadFile] and [Open] are the one bounded open-and-read path for
//     inputs: regular files only (FIFOs, sockets and devices are refused up
//     front, before any read, with [ErrNotRegular]), a size cap per input
//     kind ([Limit]), and reads that stop when their context is canceled.
//   - [WriteFile] and [StageDir] write files and folders all-or-nothing
//     (temporary sibling, sync, rename) through a [Root]: a link at the
//     name is replaced, never written through.
//   - [OpenOurs] and [Root.OpenOurs] open a file this project rewrites in
//     place or appends to (a skills lock, the audit log, the helper log), and
//     [ReadOurs] reads a state file it trusts because it wrote it; both
//     refuse, with a [*NotOursError] naming the file and the fix, a file that
//     is not this user's own ([CheckOurs]: another owner, a second hard link
//     that a write would change too, a group or other write bit). Files this
//     user's earlier runs made pass. Windows files carry ACLs instead, and
//     these checks do not apply there.
//
// The root folder itself is trusted: it is the user's own choice (project
// folder, $CLAUDE_CONFIG_DIR, $CODEX_HOME, the global lock's folder). Only
// what lies beneath it is treated as hostile.
package fsutil
