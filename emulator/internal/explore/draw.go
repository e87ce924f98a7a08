package explore

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// The menu Draw picks from. By default it holds only adversity a correct client survives:
//
//   - on each route the client used (DrawRequest.Routes, else DefaultRoutes), at an ordinal
//     within the count it used: error 503 service_unavailable and 429 rate_limited with a
//     Retry-After of 1 or 2 seconds, given as seconds or as an HTTP date; error 500
//     internal_error; a connection reset before the service acts, and on a POST one after it
//     acted; a malformed body (not on files); a truncated body; a gateway's 502; a delay of
//     50 to 200 ms (explore runs must stay fast)
//   - on POST /v1/generate: the clock advanced 11 minutes in flight, so its quote has expired
//   - on GET /files/**: a download cut after 100 bytes; links signed for one minute (a knob)
//     and the clock advanced 5 minutes before the fetch, so the link has expired and must be
//     refreshed
//   - knobs: a concurrency limit of 1 (jobs queue); evolution members and status (unknown
//     members in answers, an unknown status before running)
//   - on a job the client made: outcome slow (a wait=true generation answers 202 and the
//     client polls), outcome partial (some outputs filtered out)
//
// With DrawRequest.Terminal it also holds outcomes no client turns into success, judged by
// the report and the ledger alone: a job failed with one of FailureCodes, a job expired, a
// generation refused by the content policy.
//
// Knobs go in one perturbation of the plan that only sets them, as the plan language wants.
// Each item names the coverage cases it reaches (evidence.Cases ids); an item none of whose
// cases the request's Reached lists weighs unreachedWeight times an item already reached.

// DefaultRoutes are the routes a plan strikes when the request says none: one request of
// each of a generation's steps.
var DefaultRoutes = map[string]int{"POST /v1/quotes": 1, "POST /v1/generate": 1, "GET /v1/jobs/{id}": 1, "GET /files/**": 1}

// FailureCodes are the job failure codes a terminal plan's outcome fail draws from.
var FailureCodes = []string{"generation_failed", "provider_timeout", "provider_error", "out_of_capacity", "content_policy_violation"}

// Weights of menu items: an item whose cases are all reached, and one with a case not yet
// reached.
const (
	reachedWeight   = 1
	unreachedWeight = 4
)

// MaxPlan bounds the perturbations of a plan the explore endpoints and --replay take.
const MaxPlan = 64

// maxOrdinal bounds the ordinal a perturbation strikes: a client's hundredth poll is no harder
// than its tenth.
const maxOrdinal = 16

// The routes menu items name.
const (
	routeGenerate = "POST /v1/generate"
	routeFiles    = evidence.FilesRoute
)

// item is one entry of the menu: the cases it reaches and how its perturbation is drawn.
type item struct {
	cases []string
	// at is where it strikes (a route or "job"); max bounds the ordinal. An item without one
	// only turns knobs.
	at  string
	max int
	// make fills in what the perturbation striking at does; nil for knobs only.
	make func(d *drawer, p *api.Perturbation)
	// knobs turns the knobs the item needs, in the plan's one set of knobs (a perturbation
	// that sets knobs does nothing else); nil for none.
	knobs func(k *api.Knobs)
}

// drawer is the random source of one draw: a PCG stream, read only through Uint64 so the
// draws are the same on every machine and every Go version.
type drawer struct{ src *rand.PCG }

// intn is a number in [0, n).
func (d *drawer) intn(n int) int { return int(d.src.Uint64() % uint64(n)) }

// pick is an index of weights drawn in proportion to its weight.
func (d *drawer) pick(weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	r := d.intn(total)
	for i, w := range weights {
		if r < w {
			return i
		}
		r -= w
	}
	return len(weights) - 1
}

// mix spreads the bits of x (splitmix64's finalizer), so neighbouring seeds and runs start
// unrelated streams.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// maxPerturbations is the most perturbations a drawn plan holds.
const maxPerturbations = 3

// Draw draws the plan of a run: 1 to 3 perturbations from the menu, a pure function of the
// request (the same request gives the same plan and log on every machine).
func Draw(req api.DrawRequest) api.Drawn {
	d := &drawer{src: rand.NewPCG(mix(uint64(req.Seed)), mix(uint64(req.Run)^0x5eed))}
	routes := req.Routes
	if len(routes) == 0 {
		routes = DefaultRoutes
	}
	reached := map[string]bool{}
	for _, c := range req.Reached {
		reached[c] = true
	}
	menu := menuFor(routes, req.Terminal, reached)
	ps := []api.Perturbation{}
	knobsAt := -1 // where in ps the plan's one set of knobs is
	used := map[string]bool{}
	for n := 1 + d.pick([]int{3, 2, 1}); len(ps) < n && len(menu) > 0; {
		weights := make([]int, len(menu))
		for i, it := range menu {
			weights[i] = reachedWeight
			for _, c := range it.cases {
				if !reached[c] {
					weights[i] = unreachedWeight
					break
				}
			}
		}
		i := d.pick(weights)
		it := menu[i]
		menu = slices.Delete(menu, i, i+1)
		var strike *api.Perturbation
		if it.make != nil {
			strike = &api.Perturbation{At: it.at + "#" + strconv.Itoa(1+d.intn(min(it.max, maxOrdinal)))}
			it.make(d, strike)
		}
		grows := 0
		if strike != nil {
			grows++
		}
		if it.knobs != nil && knobsAt < 0 {
			grows++
		}
		if (strike != nil && used[strike.At]) || len(ps)+grows > maxPerturbations {
			continue // one perturbation per request or job, and no more than the most
		}
		if it.knobs != nil {
			if knobsAt < 0 {
				knobsAt = len(ps)
				ps = append(ps, api.Perturbation{Set: &api.Knobs{}})
			}
			it.knobs(ps[knobsAt].Set)
		}
		if strike != nil {
			used[strike.At] = true
			ps = append(ps, *strike)
		}
	}
	plan := api.Plan{Perturbations: ps}
	return api.Drawn{Plan: plan, Log: Log(plan)}
}

// knownCase is the coverage case id, when the list has it; else fallback.
func knownCase(id, fallback string) string {
	if caseIDs[id] {
		return id
	}
	return fallback
}

var caseIDs = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range evidence.Cases() {
		m[c.ID] = true
	}
	return m
}()

// retryAfter draws a Retry-After of 1 or 2 seconds, as seconds or as a date.
func retryAfter(d *drawer, p *api.Perturbation) {
	p.RetryAfter = 1 + d.intn(2)
	if d.intn(2) == 1 {
		p.RetryAfterFormat = api.RetryAfterDate
	}
}

// menuFor is the menu for the routes a client used, in a fixed order.
func menuFor(routes map[string]int, terminal bool, reached map[string]bool) []item {
	var menu []item
	names := make([]string, 0, len(routes))
	for r, n := range routes {
		if n > 0 {
			names = append(names, r)
		}
	}
	slices.Sort(names)
	for _, r := range names {
		n := routes[r]
		menu = append(menu,
			item{cases: []string{knownCase(r+" 503 service_unavailable", "fault error")}, at: r, max: n, make: func(d *drawer, p *api.Perturbation) {
				p.Action, p.Status, p.Code = api.FaultError, 503, "service_unavailable"
				retryAfter(d, p)
			}},
			item{cases: []string{knownCase(r+" 429 rate_limited", "fault error")}, at: r, max: n, make: func(d *drawer, p *api.Perturbation) {
				p.Action, p.Status, p.Code = api.FaultError, 429, "rate_limited"
				retryAfter(d, p)
			}},
			item{cases: []string{"fault error"}, at: r, max: n, make: func(_ *drawer, p *api.Perturbation) {
				p.Action, p.Status, p.Code = api.FaultError, 500, "internal_error"
			}},
			item{cases: []string{"fault reset"}, at: r, max: n, make: func(_ *drawer, p *api.Perturbation) { p.Action = api.FaultReset }},
			item{cases: []string{"fault truncated"}, at: r, max: n, make: func(_ *drawer, p *api.Perturbation) { p.Action = api.FaultTruncated }},
			item{cases: []string{"fault gateway"}, at: r, max: n, make: func(_ *drawer, p *api.Perturbation) {
				p.Action, p.Status = api.FaultGateway, 502
			}},
			item{cases: []string{"fault delay"}, at: r, max: n, make: func(d *drawer, p *api.Perturbation) {
				p.Action, p.Delay = api.FaultDelay, api.Duration(time.Duration(5+d.intn(16))*10*time.Millisecond)
			}},
		)
		if strings.HasPrefix(r, "POST ") {
			menu = append(menu, item{cases: []string{"fault reset"}, at: r, max: n, make: func(_ *drawer, p *api.Perturbation) {
				p.Action, p.After = api.FaultReset, true
			}})
		}
		if r != routeFiles {
			// A file's body is not JSON to begin with.
			menu = append(menu, item{cases: []string{"fault malformed"}, at: r, max: n, make: func(_ *drawer, p *api.Perturbation) { p.Action = api.FaultMalformed }})
		}
	}
	gens := routes[routeGenerate]
	if gens > 0 {
		menu = append(menu,
			item{cases: []string{"POST /v1/generate 422 quote_expired"}, at: routeGenerate, max: gens, make: func(_ *drawer, p *api.Perturbation) {
				p.Advance = api.Duration(11 * time.Minute)
			}},
			item{cases: []string{"queued behind a concurrency limit"}, knobs: func(k *api.Knobs) { k.Concurrency = 1 }},
			item{cases: []string{"evolution member", "evolution status"}, knobs: func(k *api.Knobs) {
				k.Evolution = &api.Evolution{Members: true, Status: true}
			}},
			item{cases: []string{"wait timed out"}, at: "job", max: gens, make: func(_ *drawer, p *api.Perturbation) { p.Outcome = "slow" }},
			item{cases: []string{"partial result"}, at: "job", max: gens, make: func(_ *drawer, p *api.Perturbation) { p.Outcome = "partial" }},
		)
	}
	if files := routes[routeFiles]; files > 0 {
		menu = append(menu,
			item{cases: []string{"fault download", "ranged download"}, at: routeFiles, max: files, make: func(_ *drawer, p *api.Perturbation) {
				p.Action, p.Download = api.FaultDownload, &api.Download{CutAfter: 100}
			}},
			item{cases: []string{"link refreshed"}, at: routeFiles, max: files,
				make:  func(_ *drawer, p *api.Perturbation) { p.Advance = api.Duration(5 * time.Minute) },
				knobs: func(k *api.Knobs) { k.URLTTL = api.Duration(time.Minute) }},
		)
	}
	if terminal && gens > 0 {
		var fails []string
		for _, c := range FailureCodes {
			fails = append(fails, "job failed "+c)
		}
		menu = append(menu,
			item{cases: fails, at: "job", max: gens, make: func(d *drawer, p *api.Perturbation) {
				// A code not yet reached is four times as likely as one reached.
				weights := make([]int, len(FailureCodes))
				for i, c := range FailureCodes {
					weights[i] = reachedWeight
					if !reached["job failed "+c] {
						weights[i] = unreachedWeight
					}
				}
				p.Outcome, p.Code = "fail", FailureCodes[d.pick(weights)]
			}},
			item{cases: []string{"job expired queue_timeout"}, at: "job", max: gens, make: func(_ *drawer, p *api.Perturbation) { p.Outcome = "expire" }},
			item{cases: []string{"generation refused"}, at: "job", max: gens, make: func(_ *drawer, p *api.Perturbation) { p.Outcome = "refuse" }},
		)
	}
	return menu
}

// Terminal reports whether the plan forces an outcome no client turns into success, so the
// command's exit status is no judge of the client.
func Terminal(p api.Plan) bool {
	for _, q := range p.Perturbations {
		switch q.Outcome {
		case "fail", "expire", "refuse", "content_policy":
			return true
		}
	}
	return false
}

// Bounds of a draw request: what earlier runs reached and the routes they took are a few
// hundred names at most, each a coverage case or a route.
const (
	MaxReached   = 1000
	MaxRoutes    = 256
	maxNameBytes = 256
)

// routeForm is a route as a verdict names it: a method and a path, no ordinal.
var routeForm = regexp.MustCompile(`^[A-Z]+ /[^\s#]*$`)

// CheckDrawRequest lists what is wrong with a draw request, at its JSON Pointers.
func CheckDrawRequest(req api.DrawRequest) []api.FieldError {
	var errs []api.FieldError
	if len(req.Reached) > MaxReached {
		errs = append(errs, api.FieldError{Pointer: "/reached", Message: fmt.Sprintf("at most %d cases", MaxReached)})
	}
	for i, c := range req.Reached {
		if len(c) > maxNameBytes {
			errs = append(errs, api.FieldError{Pointer: "/reached/" + strconv.Itoa(i), Message: fmt.Sprintf("a case id is at most %d bytes", maxNameBytes)})
			break
		}
	}
	if len(req.Routes) > MaxRoutes {
		errs = append(errs, api.FieldError{Pointer: "/routes", Message: fmt.Sprintf("at most %d routes", MaxRoutes)})
	}
	for _, r := range slices.Sorted(maps.Keys(req.Routes)) {
		switch {
		case len(r) > maxNameBytes || !routeForm.MatchString(r):
			errs = append(errs, api.FieldError{Pointer: "/routes/" + schema.EscapePointer(r), Message: `a route is "METHOD /path", such as "GET /v1/jobs/{id}"`})
		case req.Routes[r] < 0:
			errs = append(errs, api.FieldError{Pointer: "/routes/" + schema.EscapePointer(r), Message: "a count is 0 or more"})
		}
		if len(errs) >= 10 {
			break
		}
	}
	if req.Run < 0 {
		errs = append(errs, api.FieldError{Pointer: "/run", Message: "a run is 0 or more"})
	}
	return errs
}

// CheckShrinkRequest lists what is wrong with a shrink request, at its JSON Pointers.
func CheckShrinkRequest(req api.ShrinkRequest) []api.FieldError {
	if n := len(req.Plan.Perturbations); n > MaxPlan {
		return []api.FieldError{{Pointer: "/plan/perturbations", Message: fmt.Sprintf("a plan to shrink holds at most %d perturbations, not %d", MaxPlan, n)}}
	}
	return nil
}
