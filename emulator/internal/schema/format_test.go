package schema

import "testing"

// TestStrictURI: "uri" and "uri-reference" refuse what RFC 3986 forbids, which the library's
// own checks let through, and still take real URIs and references.
func TestStrictURI(t *testing.T) {
	t.Parallel()
	uri, ref := mustCompile(t, `{"format": "uri"}`), mustCompile(t, `{"format": "uri-reference"}`)
	for _, tc := range []struct {
		s        string
		uri, ref bool
	}{
		{"https://example.com/a.png", true, true},
		{"https://example.com/a%20b.png?x=1&y=a:b/c?#top/x?y", true, true},
		{"urn:isbn:0451450523", true, true},
		{"mailto:a@example.com", true, true},
		{"data:image/png;base64,iVBORw0KGgo=", true, true},
		{"http://[::1]:8080/p", true, true},
		{"http://user:pw@[2001:db8::1]/", true, true},
		{"s3://bucket/key-(1)_~!$&'*+,;=.png", true, true},
		{"a/b.png", false, true},
		{"//cdn.example.com/a.png", false, true},
		{"?q=1", false, true},
		{"", false, true},
		{"https://example.com/a b.png", false, false},
		{"https://example.com/a|b", false, false},
		{"https://example.com/{id}", false, false},
		{`https://example.com/a\b`, false, false},
		{`https://example.com/"a"`, false, false},
		{"https://example.com/<a>", false, false},
		{"https://example.com/a^b", false, false},
		{"https://example.com/a`b", false, false},
		{"https://example.com/é", false, false},
		{"https://example.com/%zz", false, false},
		{"https://example.com/%4", false, false},
		{"https://example.com/a#b#c", false, false},
		{"https://example.com/a?x[]=1", false, false},
		{"https://[::1]x/", false, false},
		{"http://a@b@c/", false, false},
		{"a[1]", false, false},
		{"https://exa\tmple.com/", false, false},
	} {
		if got := uri.Validate(tc.s) == nil; got != tc.uri {
			t.Errorf("format uri, %q: valid=%v; want %v", tc.s, got, tc.uri)
		}
		if got := ref.Validate(tc.s) == nil; got != tc.ref {
			t.Errorf("format uri-reference, %q: valid=%v; want %v", tc.s, got, tc.ref)
		}
	}
}
