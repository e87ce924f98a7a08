// Package faults holds the HTTP fault rules in force — from the scenario and from the control
// API — and decides, request by request, which one fires. Counts ("the next 2 requests") are
// spent atomically; probabilities are drawn from the seed when there is one.
package faults

import (
	"errors"
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

// ErrFull is a rule refused because the set holds MaxRules rules or MaxBytes bytes.
var ErrFull = errors.New("the fault rules in force are at their bound")

// RuleBytes is what a rule holds, as counted against the bounds and the memory budget.
func RuleBytes(f scenario.Fault) int64 {
	m := f.Match
	return int64(ruleOverhead + len(m.Method) + len(m.Path) + len(m.Model) + len(m.Category) + len(m.OutputType) +
		len(f.Action) + len(f.Code) + len(f.RetryAfterFormat))
}

// Rule is a fault in force, with how many more times it may fire.
type Rule struct {
	ID     string         `json:"id"`
	Source string         `json:"source"` // "scenario" or "api"
	Fault  scenario.Fault `json:"fault"`
	// Remaining is how many more requests it applies to; -1 means no limit.
	Remaining int `json:"remaining"`
	Fired     int `json:"fired"`
	draws     uint64
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
	r := &Rule{ID: "fault_" + strconv.Itoa(s.nextID), Source: source, Fault: f, Remaining: -1}
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

// Pick decides what happens to a request: the first rule that matches and fires answers it,
// after the delays of every delay rule before it that fired too (delays add up, and never hide
// a later fault). Each rule that fires spends one of its count. ids names the rules that fired;
// ok is false when none did.
func (s *Set) Pick(method, path string, m *catalog.Model) (f scenario.Fault, ids string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var delay api.Duration
	var fired []string
	for _, r := range s.rules {
		if r.Remaining == 0 || !scenario.Selects(r.Fault.Match, method, path, m) {
			continue
		}
		if p := r.Fault.Probability; p != nil && *p < 1 {
			r.draws++
			if s.draw("fault", r.ID, strconv.FormatUint(r.draws, 10)) >= *p {
				continue
			}
		}
		if r.Remaining > 0 {
			r.Remaining--
		}
		r.Fired++
		fired = append(fired, r.ID)
		delay += r.Fault.Delay
		if r.Fault.Action != api.FaultDelay {
			f = r.Fault
			break
		}
	}
	if len(fired) == 0 {
		return scenario.Fault{}, "", false
	}
	if f.Action == "" {
		f.Action = api.FaultDelay
	}
	f.Delay = delay
	return f, strings.Join(fired, ","), true
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
