// Package faults holds the perturbations of the adversity plan in force — from the scenario and
// from the control API — and decides, request by request and job by job, which one strikes.
// Counts ("the next 2 requests") and ordinals ("the first POST /v1/generate") are spent
// atomically; probabilities are drawn from the seed when there is one.
package faults

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// MaxRules and MaxBytes bound the rules a set holds, the scenario's and the control API's
// together: every request walks them, and a snapshot carries them.
const (
	MaxRules = 1_000
	MaxBytes = 1 << 20
)

// ruleOverhead is what a rule costs the heap besides its text: the record, its pointer in the
// list, and a download shape or probability when it has one, rounded up.
const ruleOverhead = 256

// knobsOverhead is what a perturbation's knobs add, with the scenario they tune.
const knobsOverhead = 512

// ErrFull is a rule refused because the set holds MaxRules rules or MaxBytes bytes.
var ErrFull = errors.New("the fault rules in force are at their bound")

// RuleBytes is what a rule holds, as counted against the bounds and the memory budget.
func RuleBytes(f scenario.Fault) int64 {
	m := f.Match
	n := ruleOverhead + len(f.At) + len(m.Method) + len(m.Path) + len(m.Model) + len(m.Category) + len(m.OutputType) +
		len(f.Action) + len(f.Code) + len(f.RetryAfterFormat) + len(f.Outcome)
	if f.Set != nil {
		n += knobsOverhead
	}
	return int64(n)
}

// Rule is a fault in force, with how many more times it may fire.
type Rule struct {
	ID     string         `json:"id"`
	Source string         `json:"source"` // "scenario" or "api"
	Fault  scenario.Fault `json:"fault"`
	// Remaining is how many more requests it applies to; -1 means no limit.
	Remaining int `json:"remaining"`
	Fired     int `json:"fired"`
	// Seen counts the requests or jobs an ordinal (at) has passed over.
	Seen  int `json:"seen,omitempty"`
	draws uint64
	where scenario.Where // at, parsed; Ordinal 0 when the rule has none
}

// Set is the ordered list of rules. It is safe for concurrent use.
type Set struct {
	mu     sync.Mutex
	rules  []*Rule
	draw   Draw
	nextID int
	bytes  int64 // RuleBytes of the rules, with their ids
}

// Draw returns a number in [0, 1) named by its parts: the same parts give the same number under
// a seed. The emulator's one random source provides it.
type Draw func(parts ...string) float64

// New returns a set whose probabilities take their numbers from draw.
func New(draw Draw) *Set {
	return &Set{draw: draw}
}

// Add appends a rule and returns it with its id. It does not check the bounds: the rules of a
// scenario the emulator was given are bounded by its file.
func (s *Set) Add(source string, f scenario.Fault) Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.add(source, f)
}

// AddWithin is Add refusing with ErrFull a rule past MaxRules or MaxBytes.
func (s *Set) AddWithin(source string, f scenario.Fault) (Rule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rules) >= MaxRules || s.bytes+RuleBytes(f) > MaxBytes {
		return Rule{}, ErrFull
	}
	return *s.add(source, f), nil
}

// ReplaceSource puts fs in place of every rule from one source; with bounded, it changes
// nothing and answers ErrFull when the rules would then be past MaxRules or MaxBytes.
func (s *Set) ReplaceSource(source string, fs []scenario.Fault, bounded bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bounded {
		n, bytes := len(fs), int64(0)
		for _, f := range fs {
			bytes += RuleBytes(f)
		}
		for _, r := range s.rules {
			if r.Source != source {
				n, bytes = n+1, bytes+RuleBytes(r.Fault)+int64(len(r.ID))
			}
		}
		if n > MaxRules || bytes > MaxBytes {
			return ErrFull
		}
	}
	s.removeSource(source)
	for _, f := range fs {
		s.add(source, f)
	}
	return nil
}

// add appends a rule; s.mu is held.
func (s *Set) add(source string, f scenario.Fault) *Rule {
	s.nextID++
	r := newRule("fault_"+strconv.Itoa(s.nextID), source, f, -1)
	if f.Count > 0 {
		r.Remaining = f.Count
	}
	s.rules = append(s.rules, r)
	s.bytes += RuleBytes(f) + int64(len(r.ID))
	return r
}

// Len counts the rules in force.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rules)
}

// Bytes is what the rules hold, as counted against MaxBytes and the memory budget.
func (s *Set) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// newRule makes a rule of a checked perturbation; one at an ordinal strikes once.
func newRule(id, source string, f scenario.Fault, remaining int) *Rule {
	r := &Rule{ID: id, Source: source, Fault: f, Remaining: remaining}
	if f.At != "" {
		r.where, _ = scenario.ParseAt(f.At) // checked before it got here
		if remaining < 0 {
			r.Remaining = 1
		}
	}
	return r
}

// NeedsModel reports whether any rule matches on the request's model.
func (s *Set) NeedsModel() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if scenario.NeedsModel(r.Fault.Match) {
			return true
		}
	}
	return false
}

// Struck is what the perturbations in force do to one request: the fault that answers or
// shapes it (Fault.Action "" when none), the outcome forced on the job it makes (Outcome.Outcome
// "" when none), and the ids of every perturbation that struck it.
type Struck struct {
	Fault     scenario.Fault
	Outcome   scenario.Fault
	OutcomeID string
	IDs       string
}

// generatePath is the one request an outcome strikes: a generation.
const generatePath = "/v1/generate"

// Pick decides what happens to a request: the first fault that matches and fires answers it,
// after the delays and clock moves of every delay fault before it that fired too (delays add
// up, and never hide a later fault); the first outcome that fires on a generation steers its
// job. Each rule that fires spends one of its count; an ordinal counts every request it
// matches. ok is false when nothing struck.
func (s *Set) Pick(method, path string, m *catalog.Model) (st Struck, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var delay, advance api.Duration
	var fired []string
	generation := method == http.MethodPost && path == generatePath
	faulted := false
	var outcomeRule *Rule
	var outcomeLeft int // what the outcome rule had left before it fired
	for _, r := range s.rules {
		f := &r.Fault
		if r.Remaining == 0 || f.Set != nil || r.where.Job {
			continue
		}
		outcome := f.Outcome != ""
		blocked := (outcome && (!generation || st.Outcome.Outcome != "")) || (!outcome && faulted)
		if !s.selects(r, method, path, m, blocked) {
			continue
		}
		left := r.Remaining
		if r.Remaining > 0 {
			r.Remaining--
		}
		r.Fired++
		fired = append(fired, r.ID)
		if outcome {
			st.Outcome, st.OutcomeID, outcomeRule, outcomeLeft = *f, r.ID, r, left
			continue
		}
		delay += f.Delay
		advance += f.Advance
		if f.Action != api.FaultDelay {
			st.Fault, faulted = *f, true
		}
	}
	if outcomeRule != nil && faulted && !st.Fault.After && st.Fault.Action != api.FaultDownload {
		// A fault answers the generation before the service sees it: no job, so the outcome
		// is not spent on it.
		outcomeRule.Fired--
		outcomeRule.Remaining = outcomeLeft
		fired = slices.DeleteFunc(fired, func(id string) bool { return id == outcomeRule.ID })
		st.Outcome, st.OutcomeID = scenario.Fault{}, ""
	}
	if len(fired) == 0 {
		return Struck{}, false
	}
	if st.Fault.Action == "" && (delay > 0 || advance > 0) {
		st.Fault.Action = api.FaultDelay
	}
	st.Fault.Delay, st.Fault.Advance = delay, advance
	st.IDs = strings.Join(fired, ",")
	return st, true
}

// selects reports whether a rule strikes a request: its match (or at) selects it, its ordinal
// is this request, its probability's draw lets it, and an earlier rule has not blocked it. An
// ordinal counts every request its at selects, blocked or not. s.mu is held.
func (s *Set) selects(r *Rule, method, path string, m *catalog.Model, blocked bool) bool {
	if r.where.Ordinal > 0 {
		if !scenario.Selects(scenario.RequestMatch{Method: r.where.Method, Path: r.where.Path}, method, path, nil) {
			return false
		}
		r.Seen++
		return r.Seen == r.where.Ordinal && !blocked
	}
	if blocked || !scenario.Selects(r.Fault.Match, method, path, m) {
		return false
	}
	if p := r.Fault.Probability; p != nil && *p < 1 {
		r.draws++
		if s.draw("fault", r.ID, strconv.FormatUint(r.draws, 10)) >= *p {
			return false
		}
	}
	return true
}

// PickJob counts a generation about to make a job against every rule at job#N, each from when
// it was put in force, and returns the outcome the first rule at its ordinal forces, with the
// rule's id. With forced (the request forces an outcome of its own) it counts and forces
// nothing.
func (s *Set) PickJob(forced bool) (scenario.Fault, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hit *Rule
	for _, r := range s.rules {
		if !r.where.Job || r.Remaining == 0 {
			continue
		}
		r.Seen++
		if hit == nil && !forced && r.Seen == r.where.Ordinal {
			hit = r
		}
	}
	if hit == nil {
		return scenario.Fault{}, "", false
	}
	hit.Remaining = 0
	hit.Fired++
	return hit.Fault, hit.ID, true
}

// Knobs are the knobs the rules in force turn, later rules over earlier ones.
func (s *Set) Knobs() api.Knobs {
	s.mu.Lock()
	defer s.mu.Unlock()
	var k api.Knobs
	for _, r := range s.rules {
		if set := r.Fault.Set; set != nil {
			k = mergeKnobs(k, *set)
		}
	}
	return k
}

// mergeKnobs lays the knobs of o over k.
func mergeKnobs(k, o api.Knobs) api.Knobs {
	if o.QuoteTTL != 0 {
		k.QuoteTTL = o.QuoteTTL
	}
	if o.URLTTL != 0 {
		k.URLTTL = o.URLTTL
	}
	if o.Concurrency != 0 {
		k.Concurrency = o.Concurrency
	}
	if o.Latency != 0 {
		k.Latency = o.Latency
	}
	if o.Evolution != nil {
		k.Evolution = o.Evolution
	}
	return k
}

// List returns the rules in order.
func (s *Set) List() []Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Rule, len(s.rules))
	for i, r := range s.rules {
		out[i] = *r
	}
	return out
}

// Remove deletes one rule by id.
func (s *Set) Remove(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.rules, func(r *Rule) bool { return r.ID == id })
	if i < 0 {
		return false
	}
	s.bytes -= RuleBytes(s.rules[i].Fault) + int64(len(id))
	s.rules = slices.Delete(s.rules, i, i+1)
	return true
}

// RemoveSource deletes every rule from one source.
func (s *Set) RemoveSource(source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeSource(source)
}

// removeSource deletes every rule from one source; s.mu is held.
func (s *Set) removeSource(source string) {
	s.rules = slices.DeleteFunc(s.rules, func(r *Rule) bool {
		if r.Source == source {
			s.bytes -= RuleBytes(r.Fault) + int64(len(r.ID))
		}
		return r.Source == source
	})
}
