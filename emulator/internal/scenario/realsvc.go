package scenario

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/glob"
)

// Outcomes a client can force that real services show beyond the contract: a refusal at request
// time, and a job that succeeds with some of its outputs filtered out.
const (
	OutcomeRefuse  = "refuse"
	OutcomePartial = "partial"
)

// OutcomeNames lists every outcome a request can force, for problems about a bad one.
const OutcomeNames = "succeed, fail, content_policy, expire, slow, refuse, partial"

// Moderation is how a rule's models moderate: RefusalRate of generations are refused when they
// are asked for (422 content_policy_violation, before anything is held), and FilterRate of the
// jobs that make several outputs succeed with some of them filtered out.
type Moderation struct {
	RefusalRate *float64 `yaml:"refusal_rate"`
	FilterRate  *float64 `yaml:"filter_rate"`
}

// overlay lays o's fields that are set over m's.
func (m Moderation) overlay(o Moderation) Moderation {
	if o.RefusalRate != nil {
		m.RefusalRate = o.RefusalRate
	}
	if o.FilterRate != nil {
		m.FilterRate = o.FilterRate
	}
	return m
}

// Refuses reports whether a generation is refused, given its draw u in [0, 1).
func (m Moderation) Refuses(u float64) bool { return m.RefusalRate != nil && u < *m.RefusalRate }

// Filters reports whether a job that makes several outputs loses some, given its draw u.
func (m Moderation) Filters(u float64) bool { return m.FilterRate != nil && u < *m.FilterRate }

// checkModeration checks a rule's moderation rates with the rule's rate check.
func checkModeration(rate func(name string, v *float64), m Moderation) {
	rate("refusal_rate", m.RefusalRate)
	rate("filter_rate", m.FilterRate)
}

// Lifecycle deprecates the models it matches at DeprecatedAt and retires them at Sunset (on
// the tenant's clock), pointing clients to Replacement.
type Lifecycle struct {
	Match ModelMatch `yaml:"match"`
	// DeprecatedAt and Sunset are RFC 3339 instants; Sunset may be left out (deprecated only).
	DeprecatedAt string `yaml:"deprecated_at"`
	Sunset       string `yaml:"sunset"`
	// Replacement is the model id clients should move to; it may be left out.
	Replacement string `yaml:"replacement"`

	deprecatedAt, sunset time.Time
}

// Matches reports whether the rule applies to the model: its model glob is the one pattern
// language (* within a segment, ** across), category and output type compared exactly.
func (l *Lifecycle) Matches(m *catalog.Model) bool {
	return m != nil && (l.Match.Model == "" || glob.Match(l.Match.Model, m.ID)) &&
		ModelMatch{Category: l.Match.Category, OutputType: l.Match.OutputType}.Matches(m)
}

// Phase is where a model is in its lifecycle at one instant.
type Phase struct {
	// Deprecated is set from the deprecation on; Retired from the sunset on.
	Deprecated, Retired bool
	DeprecatedAt        time.Time
	Sunset              time.Time // zero when the rule gives none
	Replacement         string
}

// PhaseOf returns the model's phase at now under the first lifecycle rule that matches it.
func (s *Scenario) PhaseOf(m *catalog.Model, now time.Time) Phase {
	for i := range s.Lifecycle {
		l := &s.Lifecycle[i]
		if !l.Matches(m) {
			continue
		}
		if now.Before(l.deprecatedAt) {
			return Phase{}
		}
		return Phase{Deprecated: true, Retired: !l.sunset.IsZero() && !now.Before(l.sunset),
			DeprecatedAt: l.deprecatedAt, Sunset: l.sunset, Replacement: l.Replacement}
	}
	return Phase{}
}

// DeprecatedAt returns when the model is deprecated under the first lifecycle rule that matches
// it, if one does.
func (s *Scenario) DeprecatedAt(m *catalog.Model) (time.Time, bool) {
	for i := range s.Lifecycle {
		if l := &s.Lifecycle[i]; l.Matches(m) {
			return l.deprecatedAt, true
		}
	}
	return time.Time{}, false
}

// Headers sets the answer headers of a deprecated model: Deprecation (RFC 9745, the instant as
// @<unix seconds>), Sunset (RFC 8594, an HTTP-date) and a Link to the replacement's record.
func (p Phase) Headers(h http.Header) {
	if !p.Deprecated {
		return
	}
	h.Set("Deprecation", "@"+strconv.FormatInt(p.DeprecatedAt.Unix(), 10))
	if !p.Sunset.IsZero() {
		h.Set("Sunset", p.Sunset.UTC().Format(http.TimeFormat))
	}
	if p.Replacement != "" {
		h.Set("Link", "</v1/models/"+p.Replacement+`>; rel="successor-version"`)
	}
}

// checkLifecycle checks the lifecycle rules and reads their instants.
func checkLifecycle(r *catalog.Reporter, seq *yaml.Node, rules []Lifecycle) {
	for i := range rules {
		l := &rules[i]
		line := itemLine(seq, i)
		if l.Match == (ModelMatch{}) {
			r.At(line, "lifecycle[%d]: match names no model, category or output_type", i)
		}
		if msg := glob.Check(l.Match.Model); msg != "" {
			r.At(line, "lifecycle[%d].match.model %s", i, msg)
		}
		var err error
		if l.deprecatedAt, err = instant(l.DeprecatedAt); err != nil || l.DeprecatedAt == "" {
			r.At(line, "lifecycle[%d].deprecated_at: want an RFC 3339 time such as 2026-12-01T00:00:00Z, got %q", i, l.DeprecatedAt)
		}
		if l.sunset, err = instant(l.Sunset); err != nil {
			r.At(line, "lifecycle[%d].sunset: want an RFC 3339 time such as 2027-01-01T00:00:00Z, got %q", i, l.Sunset)
		} else if !l.sunset.IsZero() && l.sunset.Before(l.deprecatedAt) {
			r.At(line, "lifecycle[%d]: sunset %s is before deprecated_at %s", i, l.Sunset, l.DeprecatedAt)
		}
		switch {
		case len(l.Replacement) > glob.MaxLen:
			r.At(line, "lifecycle[%d].replacement must be at most %d bytes long", i, glob.MaxLen)
		case strings.ContainsFunc(l.Replacement, func(c rune) bool { return c <= ' ' || c == 0x7f || strings.ContainsRune(`<>",;\`, c) }):
			// It goes into a Link header between < and >.
			r.At(line, "lifecycle[%d].replacement %q must be a model id, without spaces or any of < > \" , ; \\", i, l.Replacement)
		}
	}
}

// instant reads an RFC 3339 time; empty is the zero time.
func instant(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("not an RFC 3339 time")
	}
	return t.UTC(), nil
}
