package explore

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// Candidates are the plans one step smaller than p, the most promising first: without one of
// its perturbations (never none at all: explore's baseline run is the empty plan); with one
// perturbation striking an earlier request or job (the first, then the one before); with one
// perturbation milder (reset after → reset → error 503 → error 500; 429 → 503; a date
// Retry-After → seconds, and 1 second; a shorter delay or advance; one knob fewer; a plain
// generation_failed). Every candidate is smaller by size, so a greedy shrink ends.
func Candidates(p api.Plan) []api.Plan {
	ps := p.Perturbations
	var out []api.Plan
	with := func(i int, q api.Perturbation) {
		c := slices.Clone(ps)
		c[i] = q
		out = append(out, api.Plan{Perturbations: c})
	}
	if len(ps) > 1 {
		for i := range ps {
			out = append(out, api.Plan{Perturbations: slices.Delete(slices.Clone(ps), i, i+1)})
		}
	}
	for i, q := range ps {
		where, n, ok := ordinal(q.At)
		if !ok || n <= 1 {
			continue
		}
		q.At = where + "#1"
		with(i, q)
		if n-1 > 1 {
			q.At = where + "#" + strconv.Itoa(n-1)
			with(i, q)
		}
	}
	for i, q := range ps {
		for _, m := range milder(q) {
			with(i, m)
		}
	}
	return out
}

// milder are the perturbations one step milder than p.
func milder(p api.Perturbation) []api.Perturbation {
	var out []api.Perturbation
	if p.After {
		q := p
		q.After = false
		out = append(out, q)
	}
	if !p.After {
		switch a := action(p); a {
		case api.FaultReset, api.FaultTruncated, api.FaultMalformed, api.FaultGateway:
			q := p
			q.Action, q.Status, q.Code, q.RetryAfter, q.RetryAfterFormat = api.FaultError, 503, "service_unavailable", 1, ""
			out = append(out, q)
		case api.FaultError:
			switch {
			case p.Status == 429:
				q := p
				q.Status, q.Code = 503, "service_unavailable"
				out = append(out, q)
			case p.Status == 503:
				if p.RetryAfterFormat == api.RetryAfterDate {
					q := p
					q.RetryAfterFormat = ""
					out = append(out, q)
				}
				if p.RetryAfter > 1 {
					q := p
					q.RetryAfter = 1
					out = append(out, q)
				}
				q := p
				q.Status, q.Code, q.RetryAfter, q.RetryAfterFormat = 500, "internal_error", 0, ""
				out = append(out, q)
			}
		}
	}
	if ms := time.Duration(p.Delay).Milliseconds(); ms >= 20 {
		q := p
		q.Delay = api.Duration(time.Duration(ms/2/10*10) * time.Millisecond)
		out = append(out, q)
	}
	if s := int64(time.Duration(p.Advance) / time.Second); s >= 120 {
		q := p
		q.Advance = api.Duration(time.Duration(s/2) * time.Second)
		out = append(out, q)
	}
	if p.Set != nil && (knobCount(*p.Set) > 1 || p.At != "" || p.Match != (api.FaultMatch{})) {
		for _, k := range fewerKnobs(*p.Set) {
			q := p
			if knobCount(k) == 0 {
				q.Set = nil
			} else {
				q.Set = &k
			}
			out = append(out, q)
		}
	}
	if p.Outcome == "fail" && p.Code != "" && p.Code != "generation_failed" {
		q := p
		q.Code = "generation_failed"
		out = append(out, q)
	}
	return out
}

// fewerKnobs are k with one knob (or one evolution kind) less each.
func fewerKnobs(k api.Knobs) []api.Knobs {
	var out []api.Knobs
	if k.QuoteTTL != 0 {
		c := k
		c.QuoteTTL = 0
		out = append(out, c)
	}
	if k.URLTTL != 0 {
		c := k
		c.URLTTL = 0
		out = append(out, c)
	}
	if k.Concurrency != 0 {
		c := k
		c.Concurrency = 0
		out = append(out, c)
	}
	if k.Latency != 0 {
		c := k
		c.Latency = 0
		out = append(out, c)
	}
	if e := k.Evolution; e != nil {
		for _, off := range []func(*api.Evolution) *bool{
			func(e *api.Evolution) *bool { return &e.Members },
			func(e *api.Evolution) *bool { return &e.Headers },
			func(e *api.Evolution) *bool { return &e.Status },
			func(e *api.Evolution) *bool { return &e.OutputType },
		} {
			ec := *e
			if f := off(&ec); *f {
				*f = false
				c := k
				c.Evolution = &ec
				if ec == (api.Evolution{}) {
					c.Evolution = nil
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// knobCount is how many knobs k turns, each evolution kind one.
func knobCount(k api.Knobs) int {
	n := 0
	for _, on := range []bool{k.QuoteTTL != 0, k.URLTTL != 0, k.Concurrency != 0, k.Latency != 0} {
		if on {
			n++
		}
	}
	if e := k.Evolution; e != nil {
		for _, on := range []bool{e.Members, e.Headers, e.Status, e.OutputType} {
			if on {
				n++
			}
		}
	}
	return n
}

// ordinal splits an at into its route (or "job") and its ordinal.
func ordinal(at string) (string, int, bool) {
	i := strings.LastIndexByte(at, '#')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(at[i+1:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return at[:i], n, true
}

// size measures a plan for shrinking: each perturbation counts far more than any ordinal,
// and each ordinal more than how severe a perturbation is. Every candidate of a plan is
// smaller.
func size(p api.Plan) int64 {
	var n int64
	for _, q := range p.Perturbations {
		n += 1 << 50
		if _, o, ok := ordinal(q.At); ok {
			n += int64(min(o, 1<<30)) << 12
		}
		n += severity(q)
	}
	return n
}

// severity ranks how hard a perturbation is on a client, below 1<<12.
func severity(p api.Perturbation) int64 {
	var n int64
	if p.After {
		n += 400
	}
	switch action(p) {
	case api.FaultReset:
		n += 300
	case api.FaultTruncated:
		n += 280
	case api.FaultMalformed:
		n += 260
	case api.FaultGateway:
		n += 240
	case api.FaultError:
		switch p.Status {
		case 429:
			n += 200
		case 503:
			n += 180
		default:
			n += 100
		}
	case api.FaultDownload:
		n += 150
	}
	if p.RetryAfter > 1 {
		n += 10
	}
	if p.RetryAfterFormat == api.RetryAfterDate {
		n += 5
	}
	n += int64(bits.Len64(uint64(max(0, time.Duration(p.Delay).Milliseconds()))))
	n += int64(bits.Len64(uint64(max(0, time.Duration(p.Advance)/time.Second))))
	if p.Set != nil {
		n += 30 * int64(knobCount(*p.Set))
	}
	if p.Outcome == "fail" && p.Code != "" && p.Code != "generation_failed" {
		n += 10
	}
	return n
}
