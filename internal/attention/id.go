package attention

// ValidID reports whether id has the syntax of an attention id ([ID]): 24
// lowercase hex digits. serve's tools and audit log check ids here.
func ValidID(id string) bool {
	if len(id) != 24 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
