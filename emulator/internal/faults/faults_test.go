package faults

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

func prob(p float64) *float64 { return &p }

func TestCountsAreSpentAndTheFirstMatchWins(t *testing.T) {
	t.Parallel()
	s := New(ids.NewSeeded(1).Float64)
	s.Add("api", api.Perturbation{Match: api.FaultMatch{Path: "/v1/models"}, Status: 502, Count: 2, Action: api.FaultError})
	s.Add("scenario", api.Perturbation{Match: api.FaultMatch{Path: "/v1/**"}, Status: 503, Action: api.FaultError})
	for i, want := range []int{502, 502, 503, 503} {
		st, ok := s.Pick("GET", "/v1/models", nil)
		if !ok || st.Fault.Status != want {
			t.Errorf("request %d: %v %v, want %d", i, st.Fault.Status, ok, want)
		}
	}
	if _, ok := s.Pick("GET", "/files/x", nil); ok {
		t.Error("a fault fired outside its path")
	}
	rules := s.List()
	if rules[0].Remaining != 0 || rules[0].Fired != 2 || rules[1].Remaining != -1 || rules[1].Fired != 2 {
		t.Errorf("rules = %+v", rules)
	}
	s.RemoveSource("scenario")
	if len(s.List()) != 1 || !s.Remove(rules[0].ID) || len(s.List()) != 0 {
		t.Errorf("removal left %+v", s.List())
	}
}

func TestSeededProbabilityRepeats(t *testing.T) {
	t.Parallel()
	fire := func(seed int64) []bool {
		s := New(ids.NewSeeded(seed).Float64)
		s.Add("api", api.Perturbation{Match: api.FaultMatch{Path: "/v1/**"}, Status: 503, Probability: prob(0.3), Action: api.FaultError})
		out := make([]bool, 200)
		for i := range out {
			_, out[i] = s.Pick("GET", "/v1/models", nil)
		}
		return out
	}
	a, b, c := fire(5), fire(5), fire(6)
	fired, differs := 0, false
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 5 differs at %d", i)
		}
		if a[i] {
			fired++
		}
		if a[i] != c[i] {
			differs = true
		}
	}
	if fired < 35 || fired > 85 || !differs {
		t.Errorf("fired %d of 200 at p=0.3; differs from seed 6: %v", fired, differs)
	}
}

func TestModelMatching(t *testing.T) {
	t.Parallel()
	s := New(ids.NewRandom().Float64)
	s.Add("api", api.Perturbation{Match: api.FaultMatch{Model: "fal-ai/kling**", OutputType: "video"}, Status: 500, Action: api.FaultError})
	if !s.NeedsModel() {
		t.Error("NeedsModel = false")
	}
	kling := &catalog.Model{ID: "fal-ai/kling-video/v2", OutputType: "video"}
	flux := &catalog.Model{ID: "fal-ai/flux/dev", OutputType: "image"}
	if _, ok := s.Pick("POST", "/v1/quotes", kling); !ok {
		t.Error("kling did not match")
	}
	for _, m := range []*catalog.Model{flux, nil} {
		if _, ok := s.Pick("POST", "/v1/quotes", m); ok {
			t.Errorf("%v matched", m)
		}
	}
}

// TestHardCaseFaultsRoundTrip: a gateway or download fault, as a snapshot carries it, reads back
// as the same rule.
func TestHardCaseFaultsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`{"action": "gateway", "status": 504, "retry_after": 5, "retry_after_format": "date", "delay": "1s"}`,
		`{"match": {"path": "/files/**"}, "download": {"bytes_per_second": 1000, "chunk_bytes": 100, "pause": "250ms", "cut_after": 10, "length_delta": -3}, "count": 2}`,
	} {
		var f api.Perturbation
		if err := json.Unmarshal([]byte(src), &f); err != nil {
			t.Fatal(err)
		}
		if err := scenario.CheckPerturbation(&f); err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(f)
		var back api.Perturbation
		err := json.Unmarshal(raw, &back)
		if err == nil {
			err = scenario.CheckPerturbation(&back)
		}
		if err != nil || !reflect.DeepEqual(back, f) {
			t.Errorf("%s\nread back from %s as %+v (%v), want %+v", src, raw, back, err, f)
		}
	}
}
