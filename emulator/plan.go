package emulator

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// Request headers that steer one generation.
const (
	headerOutcome  = "X-Emulator-Outcome"
	headerScenario = "X-Emulator-Scenario"
)

// outcomeToken finds [emulator:<outcome>] inside a string of the input.
var outcomeToken = regexp.MustCompile(`\[emulator:([a-z_]+)\]`)

// directives is how a request steers its generation: a scenario for it alone and a forced
// outcome. They are read before anything changes, so a bad one fails the request cleanly.
type directives struct {
	scenario *scenario.Scenario
	outcome  string
}

// readDirectives reads the X-Emulator-* headers and [emulator:...] tokens. The header beats
// a token; the first token in key order wins over later ones.
func (s *Server) readDirectives(r *http.Request, st *state, input map[string]any) (directives, error) {
	d := directives{scenario: st.scenario.Load()}
	if name := r.Header.Get(headerScenario); name != "" {
		sc, ok := s.scenarios[name]
		if !ok && name == d.scenario.Name {
			sc, ok = d.scenario, true
		}
		if !ok {
			return d, paramError(headerScenario, "%s: no scenario %q (embedded: %s)", headerScenario, name, strings.Join(scenarioNames(s.scenarios), ", "))
		}
		d.scenario = sc
	}
	if v := r.Header.Get(headerOutcome); v != "" {
		if !scenario.ValidOutcome(v) {
			return d, paramError(headerOutcome, "%s: %q is not one of succeed, fail, content_policy, expire, slow", headerOutcome, v)
		}
		d.outcome = v
		return d, nil
	}
	ptr, outcome := findToken(input, "/input")
	if outcome == "" {
		return d, nil
	}
	if !scenario.ValidOutcome(outcome) {
		return d, badToken(ptr, outcome)
	}
	d.outcome = outcome
	return d, nil
}

// badToken reports an [emulator:...] token that names no outcome.
func badToken(ptr, outcome string) error {
	return &problem.Error{Code: problem.InvalidInput, Detail: "unknown outcome token [emulator:" + outcome + "]",
		Errors: []problem.FieldError{{Pointer: ptr, Message: "[emulator:" + outcome + "] is not one of succeed, fail, content_policy, expire, slow"}}}
}

// findToken walks the input in a fixed order (object keys sorted) for the first outcome token.
func findToken(v any, ptr string) (string, string) {
	switch x := v.(type) {
	case string:
		if m := outcomeToken.FindStringSubmatch(x); m != nil {
			return ptr, m[1]
		}
	case []any:
		for i, item := range x {
			if p, o := findToken(item, ptr+"/"+strconv.Itoa(i)); o != "" {
				return p, o
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if p, o := findToken(x[k], ptr+"/"+escapePointer(k)); o != "" {
				return p, o
			}
		}
	}
	return "", ""
}

// plan decides a new job's course: the catalog's timing for this input, shaped by the scenario
// in force and any forced outcome. Random draws derive from the seed and the job id alone.
func (s *Server) plan(m *catalog.Model, input map[string]any, jobID string, d directives) jobs.Plan {
	t := m.Timing
	run := t.Run
	if t.RunPerUnit != nil {
		v, ok := input[t.RunPerUnit.Field]
		if !ok {
			v = m.Properties[t.RunPerUnit.Field].Default
		}
		if n, ok := catalog.NumberOf(v); ok && n > 0 {
			run = scenario.Clamp(float64(run) + n*float64(t.RunPerUnit.Each))
		}
	}
	return d.scenario.Effective(m).Plan(scenario.PlanInput{
		Model:   m,
		Queue:   t.Queue,
		Run:     run,
		Timeout: t.QueueTimeout,
		Forced:  d.outcome,
		MaxWait: s.cfg.MaxWait,
		Draw:    s.draws(jobID),
	})
}

// draws returns a job's random numbers: a hash of the seed, the job id and the label, mixed
// and scaled to [0, 1).
func (s *Server) draws(jobID string) scenario.Draw {
	return func(label string) float64 {
		h := fnv.New64a()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(s.cfg.Seed))
		h.Write(b[:])
		h.Write([]byte(jobID))
		h.Write([]byte{0})
		h.Write([]byte(label))
		z := h.Sum64()
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		return float64(z>>11) / (1 << 53)
	}
}

// quoteTTL is how long a quote for the model lives under the scenario in force.
func (s *Server) quoteTTL(st *state, m *catalog.Model) time.Duration {
	if ttl := st.scenario.Load().Effective(m).QuoteTTL; ttl != nil {
		return *ttl
	}
	return s.cfg.QuoteTTL
}

// outputTTL is how long a job's outputs are served under a scenario.
func (s *Server) outputTTL(sc *scenario.Scenario, m *catalog.Model) time.Duration {
	if ttl := sc.Effective(m).OutputTTL; ttl != nil {
		return *ttl
	}
	return s.cfg.OutputTTL
}
