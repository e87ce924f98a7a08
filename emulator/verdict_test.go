package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// getJSON reads a control answer of the wire's tenant into T, wanting status 200.
func getJSON[T any](c wire, path string) T {
	c.t.Helper()
	req, _ := http.NewRequest("GET", c.base+path, nil)
	if c.header != "" {
		req.Header.Set(sim.HeaderTenant, c.header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		c.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		c.t.Fatalf("GET %s: %v in %s", path, err, raw)
	}
	return v
}

func failureRules(v api.Verdict) []string {
	var out []string
	for _, f := range v.Failures {
		out = append(out, f.Kind+" "+f.Rule)
	}
	return out
}

// GET /_emulator/verdict judges the tenant's run and GET /_emulator/bundle hands it back with
// the plan, the report and the snapshot; bad parameters are refused as parameters are.
func TestVerdictAndBundleEndpoints(t *testing.T) {
	t.Parallel()
	hs, _ := clockServer(t, "manual", Config{MaxWait: time.Minute})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "judged"}
	c.must(201, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 503, "count": 2})
	job := waitGenerate(c, "manual", map[string]any{"prompt": "a lighthouse"}, "first")
	c.must(200, "GET", "/v1/jobs/"+job["id"].(string), nil)

	v := getJSON[api.Verdict](c, "/_emulator/verdict")
	if v.Failed || len(v.Failures) != 0 {
		t.Fatalf("verdict %+v, want nothing failed", v)
	}
	if want := map[string]int{"POST /v1/quotes": 1, "POST /v1/generate": 1, "GET /v1/jobs/{id}": 1}; !reflect.DeepEqual(v.Routes, want) {
		t.Errorf("routes %v, want %v", v.Routes, want)
	}
	if !slices.Contains(v.Reached, "job succeeded") {
		t.Errorf("reached %v", v.Reached)
	}
	if v := getJSON[api.Verdict](c, "/_emulator/verdict?exit=2"); !slices.Equal(failureRules(v), []string{"exit "}) || !v.Failed {
		t.Errorf("exit=2: %+v", v)
	}
	for _, bad := range []struct{ path, param string }{
		{"/_emulator/verdict?exit=two", "exit"}, {"/_emulator/verdict?exit=1&exit=2", "exit"},
		{"/_emulator/bundle", "seed"}, {"/_emulator/bundle?seed=x", "seed"}, {"/_emulator/bundle?seed=1&run=-1", "run"},
		{"/_emulator/bundle?seed=1&exit=99999999999", "exit"},
	} {
		status, body, _ := c.do("GET", bad.path, nil)
		errs, _ := body["errors"].([]any)
		if status != 400 || body["code"] != "invalid_parameter" || len(errs) != 1 || errs[0].(map[string]any)["parameter"] != bad.param {
			t.Errorf("GET %s: %d %v, want 400 invalid_parameter naming %s", bad.path, status, body, bad.param)
		}
	}

	b := getJSON[api.Bundle](c, "/_emulator/bundle?seed=-7&run=3&exit=1")
	if b.Format != api.BundleFormat || b.Seed != -7 || b.Run != 3 {
		t.Errorf("bundle %s seed %d run %d", b.Format, b.Seed, b.Run)
	}
	if len(b.Plan.Perturbations) != 1 || b.Plan.Perturbations[0].Status != 503 || b.Plan.Perturbations[0].Count != 2 || b.Plan.Perturbations[0].Match.Path != "/v1/models" {
		t.Errorf("plan %+v, want the fault added, as given", b.Plan)
	}
	if !slices.Equal(failureRules(b.Verdict), []string{"exit "}) || !reflect.DeepEqual(b.Verdict.Routes, v.Routes) {
		t.Errorf("verdict %+v", b.Verdict)
	}
	if rep := getReport(t, c, ""); !reflect.DeepEqual(b.Report, rep) {
		t.Errorf("report %+v, want GET /_emulator/report's %+v", b.Report, rep)
	}
	var snap, direct map[string]any
	if err := json.Unmarshal(b.Snapshot, &snap); err != nil {
		t.Fatal(err)
	}
	direct = getJSON[map[string]any](c, "/_emulator/snapshot?journal=true")
	delete(snap, "random") // the id source moved on with the requests between the two
	delete(direct, "random")
	if !reflect.DeepEqual(snap, direct) {
		t.Errorf("the bundle's snapshot is not the tenant's:\n%v\n%v", snap, direct)
	}
	if j, ok := snap["journal"].(map[string]any); !ok || len(j["entries"].([]any)) != 3 {
		t.Errorf("the bundle's snapshot does not hold the journal its entries cite: %v", snap["journal"])
	}
}

// The verdict is the same on every clock, and the same in a fresh tenant the run's snapshot
// is restored into: a careful run fails nothing; a careless one, the same input generated
// twice under two keys and both charged, breaks one-charge-per-generation citing both
// generations; on a clock that stands still, a job left running breaks nothing-held.
func TestVerdictOnEveryClockAndAcrossASnapshot(t *testing.T) {
	for _, mode := range clocks {
		for _, careful := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/careful=%v", mode, careful), func(t *testing.T) {
				t.Parallel()
				hs, _ := clockServer(t, mode, Config{MaxWait: time.Minute})
				c := wire{t: t, base: hs.URL, key: "key_a", header: "run"}
				input := map[string]any{"prompt": "a lighthouse"}
				waitGenerate(c, mode, input, "first")
				want := []string(nil)
				if !careful {
					waitGenerate(c, mode, input, "second")
					want = []string{"invariant " + api.InvariantOneCharge}
					if mode != "real" { // on the real clock it ends by itself, at its own instant
						q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": "left"}})
						c.must(202, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": "left"}, "quote_id": q["quote_id"]},
							"Idempotency-Key", "left")
						want = append([]string{"invariant " + api.InvariantNothingHeld}, want...) // rules in order
					}
				}
				v := getJSON[api.Verdict](c, "/_emulator/verdict")
				if !slices.Equal(failureRules(v), want) || v.Failed != (want != nil) {
					t.Fatalf("failures %v, want %v: %+v", failureRules(v), want, v.Failures)
				}
				if !careful {
					generations := getJSON[api.Page[api.JournalEntry]](c, "/_emulator/requests?path=/v1/generate").Data
					if f := v.Failures[len(v.Failures)-1]; len(f.Entries) != 2 || f.Entries[0] != int64(generations[0].Seq) || f.Entries[1] != int64(generations[1].Seq) {
						t.Errorf("one-charge-per-generation cites %v, want the two generations %d and %d", f.Entries, generations[0].Seq, generations[1].Seq)
					}
				}

				doc := getJSON[json.RawMessage](c, "/_emulator/snapshot?journal=true")
				copied := wire{t: t, base: hs.URL, key: "key_a", header: "copy"}
				copied.must(200, "PUT", "/_emulator/snapshot", doc)
				if got := getJSON[api.Verdict](copied, "/_emulator/verdict"); !reflect.DeepEqual(got, v) {
					t.Errorf("restored verdict\n%+v\nwant\n%+v", got, v)
				}
			})
		}
	}
}

// lose sends a generation the plan's reset strikes, on a connection of its own: Go's client
// sends a request with an Idempotency-Key again by itself when a reused connection drops, which
// would hide the reset behind the replay.
func lose(c wire, body map[string]any, key string) {
	c.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", c.base+"/v1/generate", bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set(sim.HeaderTenant, c.header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		c.t.Fatalf("the plan's reset did not strike: %d", resp.StatusCode)
	}
}

// Under real perturbations of a plan the verdict judges the client, not the plan: the answer to
// the first generation lost after the service made its job (after: true), a client that retries
// with a new key is charged twice and never sees the first job, and a client that retries with
// the same key gets its one job back; a plan's advance that lets the quote expire in flight
// accuses nobody, and a client that quotes again passes. The bundle's plan, put in another
// tenant, is the plan in force.
func TestVerdictUnderAPlan(t *testing.T) {
	input := map[string]any{"prompt": "a lighthouse"}
	lostAnswer := map[string]any{"at": "POST /v1/generate#1", "action": "reset", "after": true}
	tests := []struct {
		name   string
		plan   map[string]any
		client func(c wire)
		want   []string
	}{
		{"lost answer, new key", lostAnswer, func(c wire) {
			q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
			lose(c, map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "k1")
			q = c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
			job := c.must(202, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", "k2")
			c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "5s"})
			c.must(200, "GET", "/v1/jobs/"+job["id"].(string), nil)
		}, []string{"finding new-key-on-retry", "invariant " + api.InvariantChargedUnseen, "invariant " + api.InvariantOneCharge}},
		{"lost answer, same key", lostAnswer, func(c wire) {
			q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
			body := map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}
			lose(c, body, "k1")
			job := c.must(202, "POST", "/v1/generate", body, "Idempotency-Key", "k1")
			c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "5s"})
			c.must(200, "GET", "/v1/jobs/"+job["id"].(string), nil)
		}, nil},
		{"quote expired in flight, quoted again", map[string]any{"at": "POST /v1/generate#1", "advance": "15m"}, func(c wire) {
			q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
			c.must(422, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", "k1")
			q = c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
			job := c.must(202, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", "k2")
			c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "5s"})
			c.must(200, "GET", "/v1/jobs/"+job["id"].(string), nil)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hs, _ := clockServer(t, "manual", Config{MaxWait: time.Minute})
			c := wire{t: t, base: hs.URL, key: "key_a", header: "planned"}
			plan := map[string]any{"perturbations": []any{tt.plan}}
			c.must(200, "PUT", "/_emulator/plan", plan)
			tt.client(c)
			v := getJSON[api.Verdict](c, "/_emulator/verdict")
			if got := failureRules(v); !slices.Equal(got, tt.want) {
				t.Fatalf("failures %v, want %v: %+v", got, tt.want, v.Failures)
			}
			if rep := getReport(t, c, ""); tt.want == nil && len(rep.Findings) != 0 {
				t.Errorf("findings %+v, want none", rep.Findings)
			}
			// The bundle's plan, put in a fresh tenant, is the plan in force here.
			b := getJSON[api.Bundle](c, "/_emulator/bundle?seed=7")
			replay := wire{t: t, base: hs.URL, key: "key_a", header: "replay"}
			replay.must(200, "PUT", "/_emulator/plan", b.Plan)
			inForce := func(c wire) []api.Fault {
				p := getJSON[api.PlanInForce](c, "/_emulator/plan").Perturbations
				for i := range p {
					p[i].Remaining, p[i].Fired, p[i].Seen = 0, 0, 0 // what the run used of them
				}
				return p
			}
			if got, want := inForce(replay), inForce(c); len(want) != 1 || !reflect.DeepEqual(got, want) {
				t.Errorf("the bundle's plan %+v replays as %+v, want %+v", b.Plan, got, want)
			}
		})
	}
}
