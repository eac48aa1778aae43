//go:build !unix

package skill

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this platform") }
