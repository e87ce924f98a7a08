package explore

import (
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// Log is a plan on one line, its perturbations as Describe gives them joined by "; ", or
// "no perturbations". It holds nothing but the plan, so the same plan logs the same bytes.
func Log(p api.Plan) string {
	if len(p.Perturbations) == 0 {
		return "no perturbations"
	}
	parts := make([]string, len(p.Perturbations))
	for i, q := range p.Perturbations {
		parts[i] = Describe(q)
	}
	return strings.Join(parts, "; ")
}

// Describe is one perturbation in a few words: where it strikes, then what it does, such as
// "POST /v1/generate#1 error 503 service_unavailable retry_after=2s(date)".
func Describe(p api.Perturbation) string {
	var w []string
	switch {
	case p.At != "":
		w = append(w, p.At)
	case p.Match != (api.FaultMatch{}):
		m := p.Match
		w = append(w, "match")
		for _, kv := range [][2]string{{"", m.Method}, {"", m.Path}, {"model=", m.Model}, {"category=", m.Category}, {"output_type=", m.OutputType}} {
			if kv[1] != "" {
				w = append(w, kv[0]+kv[1])
			}
		}
	}
	if p.At == "" && (p.Count != 0 || p.Probability != nil) {
		if p.Count != 0 {
			w = append(w, "count="+strconv.Itoa(p.Count))
		}
		if p.Probability != nil {
			w = append(w, "probability="+strconv.FormatFloat(*p.Probability, 'g', -1, 64))
		}
	}
	if p.Advance != 0 {
		w = append(w, "advance "+short(p.Advance))
	}
	a := action(p)
	if a == api.FaultDelay && p.Delay == 0 {
		a = "" // an advance alone, which the emulator lists as a delay of nothing
	}
	if a != "" {
		w = append(w, a)
		switch a {
		case api.FaultError, api.FaultGateway:
			if p.Status != 0 {
				w = append(w, strconv.Itoa(p.Status))
			}
		}
		if p.Code != "" && p.Outcome == "" {
			w = append(w, p.Code)
		}
		if p.RetryAfter != 0 {
			ra := "retry_after=" + strconv.Itoa(p.RetryAfter) + "s"
			if p.RetryAfterFormat == api.RetryAfterDate {
				ra += "(date)"
			}
			w = append(w, ra)
		}
		if p.Delay != 0 {
			if a == api.FaultDelay {
				w = append(w, short(p.Delay))
			} else {
				w = append(w, "delay="+short(p.Delay))
			}
		}
		if d := p.Download; d != nil {
			for _, kv := range []struct {
				name string
				n    int
			}{{"cut_after", d.CutAfter}, {"bytes_per_second", d.BytesPerSecond}, {"chunk_bytes", d.ChunkBytes}, {"length_delta", d.LengthDelta}} {
				if kv.n != 0 {
					w = append(w, kv.name+"="+strconv.Itoa(kv.n))
				}
			}
			if d.Pause != 0 {
				w = append(w, "pause="+short(d.Pause))
			}
		}
		if p.After {
			w = append(w, "after")
		}
	}
	if p.Outcome != "" {
		w = append(w, "outcome", p.Outcome)
		if p.Code != "" {
			w = append(w, p.Code)
		}
	}
	if k := p.Set; k != nil {
		w = append(w, "set")
		for _, kv := range []struct {
			name string
			d    api.Duration
		}{{"quote_ttl", k.QuoteTTL}, {"url_ttl", k.URLTTL}, {"latency", k.Latency}} {
			if kv.d != 0 {
				w = append(w, kv.name+"="+short(kv.d))
			}
		}
		if k.Concurrency != 0 {
			w = append(w, "concurrency="+strconv.Itoa(k.Concurrency))
		}
		if e := k.Evolution; e != nil {
			var kinds []string
			for _, kv := range []struct {
				name string
				on   bool
			}{{"members", e.Members}, {"headers", e.Headers}, {"status", e.Status}, {"output_type", e.OutputType}} {
				if kv.on {
					kinds = append(kinds, kv.name)
				}
			}
			if len(kinds) > 0 {
				w = append(w, "evolution="+strings.Join(kinds, ","))
			}
		}
	}
	if len(w) == 0 {
		return "nothing"
	}
	return strings.Join(w, " ")
}

// action is the fault action a perturbation takes, its default read as the emulator reads it
// (error when a status is given, download when a download is, delay when only a delay is), or
// "" for none.
func action(p api.Perturbation) string {
	switch {
	case p.Action != "":
		return p.Action
	case p.Status != 0:
		return api.FaultError
	case p.Download != nil:
		return api.FaultDownload
	case p.Delay != 0:
		return api.FaultDelay
	}
	return ""
}

// short writes a duration without its zero tails: "11m", "1h30m", "150ms".
func short(d api.Duration) string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
