//go:build !unix

package labels

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this platform") }
