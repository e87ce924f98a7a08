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

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

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
// A pattern is compiled once and kept in a small table (cacheSlots entries, each overwritten by
// the next pattern hashing to its slot), since the same few patterns — a scenario's rules, a
// verify or expected-error pattern — are matched against many paths in a row.
func Match(pattern, s string) bool {
	if !HasWildcard(pattern) {
		return pattern == s
	}
	// The literal run before the first star must begin s; most patterns fail there.
	if lead := strings.IndexByte(pattern, '*'); !strings.HasPrefix(s, pattern[:lead]) {
		return false
	}
	slot := &cache[maphash.String(seed, pattern)%cacheSlots]
	p := slot.Load()
	if p == nil || p.text != pattern {
		p = Compile(pattern)
		slot.Store(p)
	}
	return p.Match(s)
}

// cacheSlots bounds the compiled patterns kept: at most cacheSlots × the compiled size of a
// MaxLen pattern (about 40 KB), 10 MiB, and far less for the short patterns users write.
const cacheSlots = 256

var (
	seed  = maphash.MakeSeed()
	cache [cacheSlots]atomic.Pointer[Pattern]
)

// Pattern is a compiled pattern: the automaton Match runs, one bit a pattern position.
type Pattern struct {
	text string
	n    int // positions 0..n, n accepting
	// lit[c] marks the positions whose literal is the byte c (nil: none is); star and any
	// mark the positions of `*` and `**`, stars marks both.
	lit              [256][]uint64
	star, any, stars []uint64
	words            int
}

// Compile turns a pattern into its automaton.
func Compile(pattern string) *Pattern {
	toks := compile(pattern)
	p := &Pattern{text: pattern, n: len(toks), words: (len(toks) + 1 + 63) / 64}
	p.star, p.any, p.stars = make([]uint64, p.words), make([]uint64, p.words), make([]uint64, p.words)
	for i, t := range toks {
		w, bit := i/64, uint64(1)<<(i%64)
		switch t.kind {
		case literal:
			if p.lit[t.b] == nil {
				p.lit[t.b] = make([]uint64, p.words)
			}
			p.lit[t.b][w] |= bit
		case star:
			p.star[w] |= bit
			p.stars[w] |= bit
		case doubleStar:
			p.any[w] |= bit
			p.stars[w] |= bit
		}
	}
	return p
}

// Match reports whether s matches the pattern. It runs the automaton over s a machine word of
// positions at a time, so a match costs len(s) × (len(pattern)/64 + 1) steps at most and never
// backtracks, whatever a user writes.
func (p *Pattern) Match(s string) bool {
	cur, next := make([]uint64, p.words), make([]uint64, p.words)
	cur[0] = 1
	p.closure(cur)
	for k := 0; k < len(s); k++ {
		c := s[k]
		lit := p.lit[c]
		live := false
		var carry uint64
		for w := range next {
			v := cur[w] & p.any[w]
			if c != '/' {
				v |= cur[w] & p.star[w]
			}
			if lit != nil {
				m := cur[w] & lit[w]
				v |= m<<1 | carry
				carry = m >> 63
			} else {
				v |= carry
				carry = 0
			}
			next[w] = v
			live = live || v != 0
		}
		if !live {
			return false
		}
		p.closure(next)
		cur, next = next, cur
	}
	return cur[p.n/64]&(1<<(p.n%64)) != 0
}

// closure adds, for every star position reached, the position after it: a star also matches
// nothing. Runs of stars are one token, so one step is enough.
func (p *Pattern) closure(set []uint64) {
	var carry uint64
	for w := range set {
		m := set[w] & p.stars[w]
		set[w] |= m<<1 | carry
		carry = m >> 63
	}
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
