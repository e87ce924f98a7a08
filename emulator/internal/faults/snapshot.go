package faults

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// View shows a fault as the control API takes it.
func View(f scenario.Fault) api.FaultRule {
	v := api.FaultRule{Match: api.FaultMatch(f.Match), Action: f.Action, Status: f.Status, Code: f.Code,
		Delay: api.Duration(f.Delay), RetryAfter: f.RetryAfter, Count: f.Count, Probability: f.Probability,
		Download: DownloadView(f.Download)}
	if f.RetryAfterFormat != scenario.RetryAfterSeconds {
		v.RetryAfterFormat = f.RetryAfterFormat
	}
	return v
}

// DownloadView shows a download shape as the control API takes it; nil stays nil.
func DownloadView(d *scenario.Download) *api.Download {
	if d == nil {
		return nil
	}
	return &api.Download{BytesPerSecond: d.BytesPerSecond, ChunkBytes: d.ChunkBytes, Pause: api.Duration(d.Pause),
		CutAfter: d.CutAfter, LengthDelta: d.LengthDelta}
}

// Export lists the rules in order with their counts, and the number the next rule takes.
func (s *Set) Export() api.SnapshotFaults {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := api.SnapshotFaults{NextID: s.nextID, Rules: make([]api.SnapshotFault, len(s.rules))}
	for i, r := range s.rules {
		out.Rules[i] = api.SnapshotFault{ID: r.ID, Source: r.Source, Rule: View(r.Fault), Remaining: r.Remaining, Fired: r.Fired, Draws: r.draws}
	}
	return out
}

// Import replaces the rules with exported ones. Each rule goes through the checks of a rule
// sent to the control API; each problem is reported with a JSON Pointer relative to the
// document's faults.
func (s *Set) Import(in api.SnapshotFaults, report func(ptr, msg string)) {
	rules := make([]*Rule, 0, len(in.Rules))
	seen := map[string]bool{}
	for i, sf := range in.Rules {
		at := "/rules/" + strconv.Itoa(i)
		raw, _ := json.Marshal(sf.Rule)
		f, err := scenario.ParseFault("snapshot", raw)
		if err != nil {
			report(at+"/rule", strings.TrimPrefix(err.Error(), "snapshot:"))
			continue
		}
		if sf.ID == "" || seen[sf.ID] || (sf.Source != "api" && sf.Source != "scenario") || sf.Remaining < -1 || sf.Fired < 0 {
			report(at, "a rule needs an id of its own, a source of api or scenario, and counts of at least -1 remaining and 0 fired")
			continue
		}
		seen[sf.ID] = true
		rules = append(rules, &Rule{ID: sf.ID, Source: sf.Source, Fault: f, Remaining: sf.Remaining, Fired: sf.Fired, draws: sf.Draws})
	}
	if in.NextID < 0 {
		report("/next_id", "cannot be negative")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules, s.nextID = rules, in.NextID
}
