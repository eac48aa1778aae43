//go:build !unix

package cards

import "errors"

func mkfifo(string) error { return errors.New("no fifos on this platform") }
