package cputime

import (
	"runtime"
	"testing"
)

func TestNowAdvances(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no CPU time here")
	}
	a := Now()
	x := 0
	for i := range 50_000_000 {
		x += i
	}
	_ = x
	if b := Now(); b <= a {
		t.Fatalf("CPU time did not advance: %v then %v", a, b)
	}
}
