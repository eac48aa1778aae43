package serve

import (
	"os"
	"syscall"
)

// ctimeNano is fi's inode change time in nanoseconds (0 when unknown). A
// process cannot set it, so it catches a change whose mtime was put back.
func ctimeNano(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ctim.Sec)*1e9 + uint64(st.Ctim.Nsec)
	}
	return 0
}
