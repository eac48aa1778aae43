package flowhelper

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

//go:embed helper/flow_helper.py
var program []byte

// ProgramName is the file name the program is staged under.
const ProgramName = "flow_helper.py"

// Program returns a copy of the embedded helper program's bytes.
func Program() []byte { return append([]byte(nil), program...) }

// ProgramSHA256 is the hex SHA-256 of [Program]; hello must report it
// (docs/helper.md, "Startup").
var ProgramSHA256 = func() string { s := sha256.Sum256(program); return hex.EncodeToString(s[:]) }()
