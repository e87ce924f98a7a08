// Package faults holds the HTTP fault rules in force — from the scenario and from the control
// API — and decides, request by request, which one fires. Counts ("the next 2 requests") are
// spent atomically; probabilities are drawn from the seed when there is one.
package faults

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

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
}

// Draw returns a number in [0, 1) named by its parts: the same parts give the same number under
// a seed. The emulator's one random source provides it.
type Draw func(parts ...string) float64

// New returns a set whose probabilities take their numbers from draw.
func New(draw Draw) *Set {
	return &Set{draw: draw}
}

// Add appends a rule and returns it with its id.
func (s *Set) Add(source string, f scenario.Fault) Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	r := &Rule{ID: "fault_" + strconv.Itoa(s.nextID), Source: source, Fault: f, Remaining: -1}
	if f.Count > 0 {
		r.Remaining = f.Count
	}
	s.rules = append(s.rules, r)
	return *r
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
	s.rules = slices.Delete(s.rules, i, i+1)
	return true
}

// RemoveSource deletes every rule from one source.
func (s *Set) RemoveSource(source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = slices.DeleteFunc(s.rules, func(r *Rule) bool { return r.Source == source })
}
