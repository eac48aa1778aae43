//go:build !windows

package flowhelper

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"time"
)

// getentPath is absolute: the fallback never consults PATH.
var getentPath = "/usr/bin/getent"

// Operator returns the effective OS account's user name (docs/attended.md,
// "Operator identity"):
// POSIX user.LookupId of the effective uid, and, when that pure-Go lookup
// cannot see the account (a directory-service user without cgo), the first
// field of `/usr/bin/getent passwd <uid>`. Never USER,
// LOGNAME or USERNAME, never trimmed. An error or "" fails closed with
// [MsgOperator].
func Operator() (string, error) {
	uid := strconv.Itoa(os.Geteuid())
	if u, err := user.LookupId(uid); err == nil && u.Username != "" {
		return u.Username, nil
	}
	name, err := getentName(uid)
	if err != nil || name == "" {
		return "", &StartError{Stage: StageOperator, Msg: MsgOperator, Err: errors.Join(errors.New("no account for the effective uid"), err)}
	}
	return name, nil
}

func getentName(uid string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, getentPath, "passwd", uid)
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		return "", err
	}
	line, _, _ := bytes.Cut(out, []byte("\n"))
	fields := bytes.Split(line, []byte(":"))
	if len(fields) < 3 || string(fields[2]) != uid {
		return "", errors.New("getent: unexpected answer")
	}
	return string(fields[0]), nil
}
