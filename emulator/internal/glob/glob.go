// Package glob is the one pattern language for paths and ids: wherever a user names a request
// path, a model id, a coverage case or a job id by pattern — fault, rate-limit, latency and
// download rules, verify and expected-error patterns, the journal filter, coverage's require —
// the pattern means the same thing.
//
// A pattern is matched against the whole string. `*` matches any run of characters within one
// segment (none of them a '/'), `**` matches any run of characters, '/' included; every other
// character stands for itself. So `/v1/jobs/*` matches `/v1/jobs/j1` but not
// `/v1/jobs/j1/cancel`, `/v1/jobs/**` matches both, and neither matches `/v1/jobs`.
package glob

import "strings"

// MaxLen bounds a pattern's length in bytes; Check refuses a longer one, so matching a pattern
// against a string costs at most MaxLen steps per byte of the string.
const MaxLen = 1024

// Check says what is wrong with a pattern a user wrote, or returns "".
func Check(pattern string) string {
	if len(pattern) > MaxLen {
		return "must be at most 1024 bytes long"
	}
	return ""
}

// HasWildcard reports whether a pattern matches more than the one string it spells.
func HasWildcard(pattern string) bool { return strings.IndexByte(pattern, '*') >= 0 }

// Match reports whether s matches pattern.
//
// It runs the pattern as a small automaton over s, keeping the set of pattern positions reached
// so far, so it takes time proportional to len(s) × len(pattern) at worst and never backtracks
// exponentially, whatever a user writes.
func Match(pattern, s string) bool {
	if !HasWildcard(pattern) {
		return pattern == s
	}
	toks := compile(pattern)
	// The literal run before the first star must begin s; most patterns fail there.
	lead := strings.IndexByte(pattern, '*')
	if !strings.HasPrefix(s, pattern[:lead]) {
		return false
	}
	n := len(toks)
	cur := make([]bool, n+1)
	next := make([]bool, n+1)
	list := make([]int, 0, n+1)
	nextList := make([]int, 0, n+1)
	add := func(set []bool, l []int, i int) []int {
		for i <= n && !set[i] {
			set[i] = true
			l = append(l, i)
			if i == n || toks[i].kind == literal {
				break
			}
			i++ // a star also matches nothing, so the position after it is reached too
		}
		return l
	}
	list = add(cur, list, 0)
	for k := 0; k < len(s) && len(list) > 0; k++ {
		c := s[k]
		for _, i := range list {
			if i == n {
				continue
			}
			switch t := toks[i]; t.kind {
			case literal:
				if t.b == c {
					nextList = add(next, nextList, i+1)
				}
			case star:
				if c != '/' {
					nextList = add(next, nextList, i)
				}
			case doubleStar:
				nextList = add(next, nextList, i)
			}
		}
		for _, i := range list {
			cur[i] = false
		}
		cur, next = next, cur
		list, nextList = nextList, list[:0]
	}
	return cur[n]
}

type kind uint8

const (
	literal kind = iota
	star
	doubleStar
)

type tok struct {
	kind kind
	b    byte
}

// compile turns a pattern into tokens; a run of stars is one token, `**` when it holds two or
// more.
func compile(pattern string) []tok {
	toks := make([]tok, 0, len(pattern))
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '*' {
			toks = append(toks, tok{kind: literal, b: pattern[i]})
			continue
		}
		j := i
		for j < len(pattern) && pattern[j] == '*' {
			j++
		}
		k := star
		if j-i >= 2 {
			k = doubleStar
		}
		toks = append(toks, tok{kind: k})
		i = j - 1
	}
	return toks
}
