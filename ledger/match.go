package ledger

import "strings"

// Byte-loop matchers for the fixed-shape strings of the ledger formats. Each is
// exactly the anchored regular expression in its comment (match_test.go
// checks them against regexp, differentially and by fuzzing): compiling
// those expressions cost about 1.4 ms of CPU in every `ledger verify`
// process (BENCHMARKS.md, Start-up), for strings a loop checks in
// nanoseconds.

func isLower(c byte) bool    { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isLowerHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' }
func isAlnum(c byte) bool    { return isDigit(c) || isLower(c) || 'A' <= c && c <= 'Z' }

// all reports whether every byte of s satisfies ok.
func all(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// lowerHexN is ^[0-9a-f]{n}$.
func lowerHexN(s string, n int) bool { return len(s) == n && all(s, isLowerHex) }

// isKind is ^[a-z][a-z0-9-]{1,95}$.
func isKind(s string) bool {
	return 2 <= len(s) && len(s) <= 96 && isLower(s[0]) &&
		all(s[1:], func(c byte) bool { return isLower(c) || isDigit(c) || c == '-' })
}

// isHex40 is ^[0-9a-f]{40}$ (a git commit).
func isHex40(s string) bool { return lowerHexN(s, 40) }

// isTimestamp is ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$.
func isTimestamp(s string) bool {
	const shape = "dddd-dd-ddTdd:dd:ddZ"
	if len(s) != len(shape) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if shape[i] == 'd' && !isDigit(s[i]) || shape[i] != 'd' && s[i] != shape[i] {
			return false
		}
	}
	return true
}

// versionNumber consumes ^(0|[1-9][0-9]{0,9}) from s and returns the rest.
func versionNumber(s string) (string, bool) {
	switch {
	case s == "" || !isDigit(s[0]):
		return "", false
	case s[0] == '0':
		return s[1:], true
	}
	n := 1
	for n < len(s) && n < 10 && isDigit(s[n]) {
		n++
	}
	return s[n:], true
}

// isVersion is
// ^(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})(-[0-9A-Za-z]+([.-][0-9A-Za-z]+)*)?$.
func isVersion(s string) bool {
	for i := 0; i < 3; i++ {
		var ok bool
		if s, ok = versionNumber(s); !ok {
			return false
		}
		if i < 2 {
			if s == "" || s[0] != '.' {
				return false
			}
			s = s[1:]
		}
	}
	if s == "" {
		return true
	}
	if s[0] != '-' {
		return false
	}
	// [0-9A-Za-z]+([.-][0-9A-Za-z]+)*: alphanumeric runs, each separated by
	// one '.' or '-', neither first nor last.
	s = s[1:]
	prevSep := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isAlnum(c):
			prevSep = false
		case (c == '.' || c == '-') && !prevSep:
			prevSep = true
		default:
			return false
		}
	}
	return !prevSep
}

// isEntity is ^[a-z][a-z0-9 -]{0,63}$.
func isEntity(s string) bool {
	return 1 <= len(s) && len(s) <= 64 && isLower(s[0]) &&
		all(s[1:], func(c byte) bool { return isLower(c) || isDigit(c) || c == ' ' || c == '-' })
}

// isDeployID is ^[1-9][0-9]*$.
func isDeployID(s string) bool { return s != "" && s[0] != '0' && all(s, isDigit) }

// isKMSArn is
// ^arn:aws:kms:us-east-1:992382684924:key/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$.
func isKMSArn(s string) bool {
	u, ok := strings.CutPrefix(s, "arn:aws:kms:us-east-1:992382684924:key/")
	if !ok || len(u) != 36 {
		return false
	}
	for i := 0; i < len(u); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if u[i] != '-' {
				return false
			}
		} else if !isLowerHex(u[i]) {
			return false
		}
	}
	return true
}

// isWFName is [A-Za-z0-9_.-].
func isWFName(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' }

// isInnerWF is
// ^https://github\.com/OpenAdaptAI/[A-Za-z0-9_.-]+/\.github/workflows/[A-Za-z0-9_.-]+\.ya?ml@refs/heads/[A-Za-z0-9._/-]+$.
func isInnerWF(s string) bool {
	s, ok := strings.CutPrefix(s, "https://github.com/OpenAdaptAI/")
	if !ok {
		return false
	}
	// The repository name cannot hold '/', so it ends at the first one.
	repo, rest, ok := strings.Cut(s, "/")
	if !ok || repo == "" || !all(repo, isWFName) {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, ".github/workflows/"); !ok {
		return false
	}
	// The file name cannot hold '@', so it ends at the first one.
	file, ref, ok := strings.Cut(rest, "@")
	if !ok || !all(file, isWFName) {
		return false
	}
	stem, ok := strings.CutSuffix(file, ".yml")
	if !ok {
		stem, ok = strings.CutSuffix(file, ".yaml")
	}
	if !ok || stem == "" {
		return false
	}
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	return ok && branch != "" && all(branch, func(c byte) bool { return isWFName(c) || c == '/' })
}

// isSig86 is ^[A-Za-z0-9+/]{86}==$ (a padded base64 Ed25519 signature).
func isSig86(s string) bool {
	return len(s) == 88 && s[86:] == "==" &&
		all(s[:86], func(c byte) bool { return isAlnum(c) || c == '+' || c == '/' })
}

// isOAEd is ^oa-public-trust-ed25519-[0-9a-f]{16}$.
func isOAEd(s string) bool {
	h, ok := strings.CutPrefix(s, "oa-public-trust-ed25519-")
	return ok && lowerHexN(h, 16)
}

// isOAP256 is ^oa-public-trust-p256-[0-9a-f]{16}$.
func isOAP256(s string) bool {
	h, ok := strings.CutPrefix(s, "oa-public-trust-p256-")
	return ok && lowerHexN(h, 16)
}
