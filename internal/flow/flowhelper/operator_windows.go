//go:build windows

package flowhelper

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/windows"
)

var procGetUserNameW = windows.NewLazySystemDLL("advapi32.dll").NewProc("GetUserNameW")

// Operator returns the token user's name from GetUserNameW with a
// 257-UTF-16 buffer (docs/attended.md, "Operator identity"). Never USERNAME. An error or ""
// fails closed with [MsgOperator].
func Operator() (string, error) {
	buf := make([]uint16, 257)
	n := uint32(len(buf))
	r, _, err := procGetUserNameW.Call(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)))
	if r == 0 {
		return "", &StartError{Stage: StageOperator, Msg: MsgOperator, Err: err}
	}
	name := windows.UTF16ToString(buf)
	if name == "" {
		return "", &StartError{Stage: StageOperator, Msg: MsgOperator, Err: errors.New("blank user name")}
	}
	return name, nil
}
