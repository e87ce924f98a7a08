package scenario

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

func TestLifecyclePhases(t *testing.T) {
	sc, err := Parse("l.yaml", []byte(`
defaults: {refusal_rate: 0.25}
overrides:
  - match: {model: "acme/*"}
    filter_rate: 0.5
lifecycle:
  - match: {model: "acme/*"}
    deprecated_at: 2026-02-01T00:00:00Z
    sunset: "2026-03-01T00:00:00Z"
    replacement: acme/v2/fast
`))
	if err != nil {
		t.Fatal(err)
	}
	old := &catalog.Model{ID: "acme/fast"}
	deep := &catalog.Model{ID: "acme/v2/fast"} // * stays within a segment
	r := sc.Effective(old)
	if !r.Refuses(0.2) || r.Refuses(0.3) || !r.Filters(0.4) || r.Filters(0.6) {
		t.Errorf("moderation: %+v %+v", r.RefusalRate, r.FilterRate)
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	if p := sc.PhaseOf(old, at("2026-01-31T23:59:59Z")); p.Deprecated {
		t.Errorf("before: %+v", p)
	}
	p := sc.PhaseOf(old, at("2026-02-01T00:00:00Z"))
	if !p.Deprecated || p.Retired || p.Replacement != "acme/v2/fast" {
		t.Errorf("deprecated: %+v", p)
	}
	h := http.Header{}
	p.Headers(h)
	if h.Get("Deprecation") != "@1769904000" || h.Get("Sunset") != "Sun, 01 Mar 2026 00:00:00 GMT" || h.Get("Link") != `</v1/models/acme/v2/fast>; rel="successor-version"` {
		t.Errorf("headers %v", h)
	}
	if p := sc.PhaseOf(old, at("2026-03-01T00:00:00Z")); !p.Retired {
		t.Errorf("at the sunset: %+v", p)
	}
	if p := sc.PhaseOf(deep, at("2027-01-01T00:00:00Z")); p.Deprecated {
		t.Errorf("another model: %+v", p)
	}
}

func TestLifecycleAndModerationAreChecked(t *testing.T) {
	_, err := Parse("bad.yaml", []byte(`
defaults: {refusal_rate: 2, filter_rate: -1}
lifecycle:
  - match: {}
    deprecated_at: tomorrow
  - match: {model: a}
    deprecated_at: 2026-02-01T00:00:00Z
    sunset: 2026-01-01T00:00:00Z
  - match: {model: b}
    sunset: 2026-01-01T00:00:00Z
  - match: {model: c}
    deprecated_at: 2026-01-01T00:00:00Z
    replacement: "x>; rel=evil"
`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"bad.yaml:2: defaults: refusal_rate must be between 0 and 1", "defaults: filter_rate must be between 0 and 1",
		"bad.yaml:4: lifecycle[0]: match names no model", `lifecycle[0].deprecated_at: want an RFC 3339 time such as 2026-12-01T00:00:00Z, got "tomorrow"`,
		"bad.yaml:6: lifecycle[1]: sunset 2026-01-01T00:00:00Z is before deprecated_at", `bad.yaml:9: lifecycle[2].deprecated_at: want an RFC 3339 time`, `bad.yaml:11: lifecycle[3].replacement "x>; rel=evil" must be a model id`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
