package faults

import (
	"strconv"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// Export lists the rules in order with their counts, and the number the next rule takes.
func (s *Set) Export() api.SnapshotFaults {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := api.SnapshotFaults{NextID: s.nextID, Rules: make([]api.SnapshotFault, len(s.rules))}
	for i, r := range s.rules {
		out.Rules[i] = api.SnapshotFault{ID: r.ID, Source: r.Source, Rule: r.Fault, Remaining: r.Remaining, Fired: r.Fired, Seen: r.Seen, Draws: r.draws}
	}
	return out
}

// Import replaces the rules with exported ones. Each rule goes through the checks of a rule
// sent to the control API, and all of them through the set's bounds; each problem is reported
// with a JSON Pointer relative to the document's faults.
func (s *Set) Import(in api.SnapshotFaults, report func(ptr, msg string)) {
	if len(in.Rules) > MaxRules {
		report("/rules", "holds "+strconv.Itoa(len(in.Rules))+" rules; a tenant holds at most "+strconv.Itoa(MaxRules))
		return
	}
	rules := make([]*Rule, 0, len(in.Rules))
	seen := map[string]bool{}
	var bytes int64
	for i, sf := range in.Rules {
		at := "/rules/" + strconv.Itoa(i)
		f := sf.Rule
		if err := scenario.CheckPerturbation(&f); err != nil {
			ptr := at + "/rule"
			if p := scenario.Pointer(err.Error(), true); p != "" {
				ptr += p
			}
			report(ptr, err.Error())
			continue
		}
		if sf.ID == "" || seen[sf.ID] || (sf.Source != "api" && sf.Source != "scenario") || sf.Remaining < -1 || sf.Fired < 0 || sf.Seen < 0 {
			report(at, "a rule needs an id of its own, a source of api or scenario, and counts of at least -1 remaining and 0 fired and seen")
			continue
		}
		seen[sf.ID] = true
		bytes += RuleBytes(f) + int64(len(sf.ID))
		r := newRule(sf.ID, sf.Source, f, sf.Remaining)
		r.Fired, r.Seen, r.draws = sf.Fired, sf.Seen, sf.Draws
		rules = append(rules, r)
	}
	if bytes > MaxBytes {
		report("/rules", "the rules hold "+strconv.FormatInt(bytes, 10)+" bytes; a tenant holds at most "+strconv.Itoa(MaxBytes))
	}
	if in.NextID < 0 {
		report("/next_id", "cannot be negative")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules, s.nextID, s.bytes = rules, in.NextID, bytes
}
