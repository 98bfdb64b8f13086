// Package labelkeys says where label keys live: under which prefix (the
// part of a key before "/"). Label sync and scheduling use it alike.
package labelkeys

import "strings"

// UnderPrefixes reports whether a label key lives under one of the prefixes
// (the part of the key before "/"). Label sync and scheduling use it alike.
func UnderPrefixes(key string, prefixes []string) bool {
	i := strings.IndexByte(key, '/')
	if i < 0 {
		return false
	}
	for _, p := range prefixes {
		if key[:i] == p {
			return true
		}
	}
	return false
}
