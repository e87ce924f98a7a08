package glob

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"/v1/jobs/*", "/v1/jobs/j1", true},
		{"/v1/jobs/*", "/v1/jobs/j1/cancel", false},
		{"/v1/jobs/*", "/v1/jobs", false},
		{"/v1/jobs/*", "/v1/jobs/", true},
		{"/v1/jobs/**", "/v1/jobs/j1/cancel", true},
		{"/v1/jobs/**", "/v1/jobs/j1", true},
		{"/v1/jobs/**", "/v1/jobs", false},
		{"/v1/jobs/*/cancel", "/v1/jobs/j1/cancel", true},
		{"/v1/jobs/*/cancel", "/v1/jobs/a/b/cancel", false},
		{"/v1/jobs/**/cancel", "/v1/jobs/a/b/cancel", true},
		{"fal-ai/flux/**", "fal-ai/flux/dev", true},
		{"fal-ai/flux/**", "fal-ai/flux/pro/ultra", true},
		{"fal-ai/flux/*", "fal-ai/flux/pro/ultra", false},
		{"fal-ai/*", "fal-ai/flux/dev", false},
		{"**", "", true},
		{"*", "", true},
		{"*", "a/b", false},
		{"**", "a/b", true},
		{"job *", "job canceled", true},
		{"GET /v1/jobs/*", "GET /v1/jobs/{id} 401 unauthenticated", true},
		{"POST /v1/generate 4*", "POST /v1/generate 402 insufficient_credits", true},
		{"POST /v1/generate 4*", "POST /v1/generate 502 bad_gateway", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axx/byyc", false},
		{"a**c", "a/b/c", true},
		{"***", "a/b", true},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"", "", true},
		{"", "x", false},
	} {
		if got := Match(c.pattern, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

// toRegexp is the meaning of a pattern spelled in the standard library's regular expressions:
// the matcher must agree with it on every input.
func toRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`\A`)
	for _, t := range compile(pattern) {
		switch t.kind {
		case literal:
			b.WriteString(regexp.QuoteMeta(string([]byte{t.b})))
		case star:
			b.WriteString(`[^/]*`)
		case doubleStar:
			b.WriteString(`(?s:.*)`)
		}
	}
	b.WriteString(`\z`)
	return regexp.MustCompile(b.String())
}

func FuzzMatch(f *testing.F) {
	f.Add("/v1/jobs/*", "/v1/jobs/j1/cancel")
	f.Add("a**b*c", "a/x/bqc")
	f.Add("*a*a*a*a*b", strings.Repeat("a", 64))
	f.Fuzz(func(t *testing.T, pattern, s string) {
		// The oracle reads runes, so it speaks only of valid UTF-8.
		if len(pattern) > MaxLen || len(s) > 4096 || !utf8.ValidString(pattern) || !utf8.ValidString(s) {
			t.Skip()
		}
		if got, want := Match(pattern, s), toRegexp(pattern).MatchString(s); got != want {
			t.Fatalf("Match(%q, %q) = %v, the regular expression says %v", pattern, s, got, want)
		}
	})
}

func TestCheckBoundsLength(t *testing.T) {
	if Check(strings.Repeat("*", MaxLen)) != "" {
		t.Fatal("a pattern of MaxLen bytes was refused")
	}
	if Check(strings.Repeat("*", MaxLen+1)) == "" {
		t.Fatal("a pattern over MaxLen bytes was accepted")
	}
}

// BenchmarkMatchWorstCase is the costliest shape: many stars that each can stand anywhere.
func BenchmarkMatchWorstCase(b *testing.B) {
	pattern := strings.Repeat("*a", MaxLen/2-1) + "b"
	s := strings.Repeat("a", 8192)
	b.ReportAllocs()
	for b.Loop() {
		Match(pattern, s)
	}
}
