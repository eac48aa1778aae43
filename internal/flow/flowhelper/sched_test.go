package flowhelper_test

import "runtime"

func runtimeGosched() { runtime.Gosched() }
