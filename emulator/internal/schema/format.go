package schema

import (
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// formats are the format checks the emulator's compilers use in place of the library's: its
// "uri" and "uri-reference" take whatever net/url parses, spaces, "|", "{}" and "\" included,
// which RFC 3986 forbids. Each still requires the library's own check. They are given to each
// compiler, never added to the library's process-wide table.
var formats = map[string]func(any) bool{
	"uri":           strictURI(jsonschema.Formats["uri"]),
	"uri-reference": strictURI(jsonschema.Formats["uri-reference"]),
}

// strictURI adds RFC 3986's characters to a library check: only unreserved, reserved and
// percent-encoded ones, "#" once, "@" at most once in the authority, and "[" "]" only around
// an IP literal host.
func strictURI(lib func(any) bool) func(any) bool {
	return func(v any) bool {
		s, ok := v.(string)
		if !ok {
			return true
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			case c == '%':
				if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
					return false
				}
				i += 2
			case !strings.ContainsRune("-._~:/?#[]@!$&'()*+,;=", rune(c)):
				return false
			}
		}
		if strings.Count(s, "#") > 1 {
			return false
		}
		authority, hasAuthority := authorityOf(s)
		if hasAuthority && strings.Count(authority, "@") > 1 {
			return false
		}
		if strings.ContainsAny(s, "[]") {
			host := authority[strings.LastIndexByte(authority, '@')+1:]
			end := strings.IndexByte(host, ']')
			if !hasAuthority || !strings.HasPrefix(host, "[") || end < 0 || end+1 < len(host) && host[end+1] != ':' ||
				strings.Count(s, "[") != 1 || strings.Count(s, "]") != 1 {
				return false
			}
		}
		return lib(s)
	}
}

// authorityOf returns the authority of a URI or relative reference, if it has one: what
// follows "//" at the start of the hierarchical part, up to the path, query or fragment.
func authorityOf(s string) (string, bool) {
	if i := strings.IndexAny(s, ":/?#"); i > 0 && s[i] == ':' {
		s = s[i+1:] // the scheme
	}
	rest, ok := strings.CutPrefix(s, "//")
	if !ok {
		return "", false
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
