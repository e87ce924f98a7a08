package schema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// EscapePointer writes s as one JSON Pointer reference token (RFC 6901).
func EscapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// UnescapePointer reads one JSON Pointer reference token back into the key it names.
func UnescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// ParsePointer splits an RFC 6901 JSON Pointer into its unescaped reference tokens: "" names
// the whole document (no tokens); any other pointer starts with "/", and a "~" in it is "~0" or
// "~1".
func ParsePointer(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if s[0] != '/' {
		return nil, errors.New(`is not a JSON Pointer: it must be empty or start with "/"`)
	}
	tokens := strings.Split(s[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, errors.New(`is not a JSON Pointer: "~" must be followed by 0 or 1`)
			}
		}
		tokens[i] = UnescapePointer(t)
	}
	return tokens, nil
}

// ArrayIndex reads a reference token as an index into an array of n items. RFC 6901 writes an
// index in decimal without a leading zero or a sign (so "01", "+1" and "-0" name nothing), and
// "-" names the item after the last, which never exists; an index past the end names nothing
// either.
func ArrayIndex(tok string, n int) (int, bool) {
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || i >= n || strconv.Itoa(i) != tok {
		return 0, false
	}
	return i, true
}

// Resolve finds the value that reference tokens (from ParsePointer) name in decoded JSON
// (objects as map[string]any, arrays as []any). found tells a member that is present with the
// value null (nil, true) from one that is absent (nil, false).
func Resolve(doc any, tokens []string) (v any, found bool) {
	v, n := follow(doc, tokens)
	if n < len(tokens) {
		return nil, false
	}
	return v, true
}

// Lookup resolves the JSON Pointer ptr in doc; its error says that ptr is not a pointer or which
// of its prefixes names nothing.
func Lookup(doc any, ptr string) (any, error) {
	tokens, err := ParsePointer(ptr)
	if err != nil {
		return nil, fmt.Errorf("%q %v", ptr, err)
	}
	v, n := follow(doc, tokens)
	if n < len(tokens) {
		raw := strings.Split(ptr[1:], "/")
		return nil, fmt.Errorf("%s: nothing at /%s", ptr, strings.Join(raw[:n+1], "/"))
	}
	return v, nil
}

// follow steps through doc token by token and returns where it stopped: the value and how many
// tokens it followed (all of them when the pointer names a value).
func follow(doc any, tokens []string) (any, int) {
	v := doc
	for n, tok := range tokens {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[tok]
			if !ok {
				return nil, n
			}
			v = next
		case []any:
			i, ok := ArrayIndex(tok, len(x))
			if !ok {
				return nil, n
			}
			v = x[i]
		default:
			return nil, n
		}
	}
	return v, len(tokens)
}
