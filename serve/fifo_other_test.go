//go:build !unix

package serve

import "errors"

func mkfifoTest(string) error { return errors.New("no FIFOs on this platform") }
