//go:build !linux

package fswatch

import "time"

type watch struct{}

func accessed(string) (watch, bool, error) { return watch{}, false, nil }
func (watch) wait(time.Duration) bool      { return false }
func (watch) close()                       {}
