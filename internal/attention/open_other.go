//go:build !unix

package attention

import "os"

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
