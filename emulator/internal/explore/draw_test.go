package explore

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
)

// TestDrawDeterministic: the same request draws the same bytes, and the draw of a known seed
// is pinned, so every machine and Go version draws the plans another did.
func TestDrawDeterministic(t *testing.T) {
	t.Parallel()
	routes := map[string]int{"POST /v1/quotes": 1, "POST /v1/generate": 2, "GET /v1/jobs/{id}": 4, "GET /files/**": 2}
	for run := range 200 {
		for _, terminal := range []bool{false, true} {
			req := api.DrawRequest{Seed: 7, Run: run, Terminal: terminal, Routes: routes, Reached: []string{"fault reset"}}
			a, _ := json.Marshal(Draw(req))
			b, _ := json.Marshal(Draw(req))
			if string(a) != string(b) {
				t.Fatalf("run %d: %s then %s", run, a, b)
			}
		}
	}
	var logs []string
	for run := 1; run <= 4; run++ {
		logs = append(logs, Draw(api.DrawRequest{Seed: 7, Run: run}).Log)
	}
	want := []string{
		"POST /v1/quotes#1 error 503 service_unavailable retry_after=1s(date); GET /files/**#1 delay 180ms",
		"POST /v1/quotes#1 error 500 internal_error",
		"GET /files/**#1 error 500 internal_error",
		"GET /v1/jobs/{id}#1 truncated",
	}
	if !slices.Equal(logs, want) {
		t.Errorf("seed 7 drew\n%s\nwant\n%s", strings.Join(logs, "\n"), strings.Join(want, "\n"))
	}
}

// TestDrawShape: a plan holds 1 to 3 perturbations, each striking a route the client used at
// an ordinal it reached (or a job it made), at most one per request, job or knob set; its
// log says each; a plan not asked to be terminal never is.
func TestDrawShape(t *testing.T) {
	t.Parallel()
	routes := map[string]int{"POST /v1/quotes": 1, "POST /v1/generate": 2, "GET /v1/jobs/{id}": 3, "GET /files/**": 1, "GET /v1/models/{model}": 5}
	sizes := map[int]int{}
	terminals := 0
	for run := range 500 {
		for _, terminal := range []bool{false, true} {
			d := Draw(api.DrawRequest{Seed: 3, Run: run, Terminal: terminal, Routes: routes})
			ps := d.Plan.Perturbations
			sizes[len(ps)]++
			if len(ps) < 1 || len(ps) > 3 {
				t.Fatalf("run %d: %d perturbations", run, len(ps))
			}
			if Terminal(d.Plan) {
				if !terminal {
					t.Fatalf("run %d: a terminal plan drawn unasked: %s", run, d.Log)
				}
				terminals++
			}
			seen := map[string]bool{}
			for _, p := range ps {
				key := p.At
				if p.Set != nil {
					if (p != api.Perturbation{Set: p.Set}) || knobCount(*p.Set) == 0 {
						t.Fatalf("run %d: knobs set beside something else, or none: %s", run, d.Log)
					}
				}
				if p.At == "" {
					key = "set"
					if p.Set == nil {
						t.Fatalf("run %d: a perturbation striking nowhere that sets nothing: %s", run, d.Log)
					}
				} else {
					where, n, ok := ordinal(p.At)
					limit := routes[where]
					if where == "job" {
						limit = routes["POST /v1/generate"]
					}
					if !ok || n > limit {
						t.Fatalf("run %d: strikes %s, beyond what the client reached", run, p.At)
					}
				}
				if seen[key] {
					t.Fatalf("run %d: two perturbations at %s: %s", run, key, d.Log)
				}
				seen[key] = true
			}
			if d.Log != Log(d.Plan) || strings.Count(d.Log, "; ") != len(ps)-1 {
				t.Fatalf("run %d: log %q", run, d.Log)
			}
		}
	}
	if sizes[1] == 0 || sizes[2] == 0 || sizes[3] == 0 || terminals == 0 {
		t.Errorf("sizes drawn %v, terminal plans %d", sizes, terminals)
	}
}

// TestDrawDefaultRoutes: a request naming no routes strikes a generation's steps.
func TestDrawDefaultRoutes(t *testing.T) {
	t.Parallel()
	for run := range 300 {
		for _, p := range Draw(api.DrawRequest{Seed: 1, Run: run}).Plan.Perturbations {
			if where, n, ok := ordinal(p.At); ok && (n != 1 || (where != "job" && DefaultRoutes[where] == 0)) {
				t.Fatalf("run %d strikes %s", run, p.At)
			}
		}
	}
}

// TestDrawFavoursUnreached: a case not yet reached is drawn far more often than when it was
// reached, and the menu's cases are all cases of the coverage list.
func TestDrawFavoursUnreached(t *testing.T) {
	t.Parallel()
	all := []string{}
	for _, c := range evidence.Cases() {
		all = append(all, c.ID)
	}
	for _, it := range menuFor(map[string]int{"POST /v1/generate": 1, "GET /files/**": 1, "GET /v1/jobs": 1}, true, nil) {
		for _, c := range it.cases {
			if !slices.Contains(all, c) {
				t.Errorf("a menu item names %q, which is no coverage case", c)
			}
		}
	}
	count := func(reached []string, outcome string) int {
		n := 0
		for run := range 1000 {
			for _, p := range Draw(api.DrawRequest{Seed: 11, Run: run, Reached: reached}).Plan.Perturbations {
				if p.Outcome == outcome {
					n++
				}
			}
		}
		return n
	}
	without := slices.DeleteFunc(slices.Clone(all), func(c string) bool { return c == "partial result" })
	favoured, plain := count(without, "partial"), count(all, "partial")
	if favoured < 2*plain || plain == 0 {
		t.Errorf("partial drawn %d times while unreached, %d times once reached", favoured, plain)
	}
}
