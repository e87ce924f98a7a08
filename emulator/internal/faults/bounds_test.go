package faults

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// TestSetBounds: AddWithin refuses past MaxRules and MaxBytes, a bounded ReplaceSource past
// them changes nothing, removals give their bytes back, and an import past them is reported.
func TestSetBounds(t *testing.T) {
	t.Parallel()
	rule := func(i int) scenario.Fault {
		return api.Perturbation{Match: api.FaultMatch{Path: fmt.Sprint("/v1/", i)}, Action: api.FaultReset}
	}
	s := New(ids.NewSeeded(1).Float64)
	for i := range MaxRules {
		if _, err := s.AddWithin("api", rule(i)); err != nil {
			t.Fatalf("rule %d: %v", i, err)
		}
	}
	if _, err := s.AddWithin("api", rule(0)); !errors.Is(err, ErrFull) || s.Len() != MaxRules {
		t.Fatalf("rule %d: %v, %d held; want ErrFull and %d", MaxRules+1, err, s.Len(), MaxRules)
	}
	if err := s.ReplaceSource("scenario", []scenario.Fault{rule(0)}, true); !errors.Is(err, ErrFull) || s.Len() != MaxRules {
		t.Fatalf("a scenario's rule past the bound: %v, %d held", err, s.Len())
	}
	s.RemoveSource("api")
	if s.Len() != 0 || s.Bytes() != 0 {
		t.Fatalf("emptied: %d rules, %d bytes", s.Len(), s.Bytes())
	}

	long := api.Perturbation{Match: api.FaultMatch{Path: "/v1/" + strings.Repeat("p", 1000), Model: strings.Repeat("m", 1000)}, Action: api.FaultReset}
	n := 0
	for ; ; n++ {
		if _, err := s.AddWithin("api", long); err != nil {
			break
		}
	}
	if b := s.Bytes(); b > MaxBytes || n >= MaxRules || b < MaxBytes-RuleBytes(long)-16 {
		t.Fatalf("%d long rules held %d bytes; want just under %d", n, b, MaxBytes)
	}
	id := s.List()[0].ID
	before := s.Bytes()
	s.Remove(id)
	if got := before - s.Bytes(); got != RuleBytes(long)+int64(len(id)) {
		t.Errorf("removing a rule gave back %d bytes, want %d", got, RuleBytes(long)+int64(len(id)))
	}

	many := api.SnapshotFaults{NextID: MaxRules + 1}
	for i := range MaxRules + 1 {
		many.Rules = append(many.Rules, api.SnapshotFault{ID: fmt.Sprint("fault_", i+1), Source: "api", Rule: rule(i), Remaining: -1})
	}
	var reported []string
	New(ids.NewSeeded(1).Float64).Import(many, func(ptr, msg string) { reported = append(reported, ptr+": "+msg) })
	if len(reported) != 1 || !strings.HasPrefix(reported[0], "/rules:") {
		t.Errorf("importing %d rules reported %q", MaxRules+1, reported)
	}
}
