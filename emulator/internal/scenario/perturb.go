package scenario

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/glob"
)

// Bounds of a perturbation: a Retry-After of at most a day, in seconds; a clock moved at most a
// day by one request; knobs within what the scenario file allows.
const (
	MaxRetryAfter  = 86400
	MaxAdvance     = 24 * time.Hour
	MaxConcurrency = 1000
	MaxQuoteTTL    = 24 * time.Hour
	MaxOrdinal     = 1_000_000
)

// Where is what a perturbation's at names: one request (Method, the path glob Path, the
// tenant's Ordinal-th request matching them) or one job (Job, the tenant's Ordinal-th job).
type Where struct {
	Method, Path string
	Job          bool
	Ordinal      int
}

var atForm = regexp.MustCompile(`^(?:job|([A-Za-z]+) (/\S*))#([0-9]+)$`)

// segmentParam is a route's {name}: in at it stands for one path segment, or for the rest of
// the path when it ends it (a model id holds slashes: GET /v1/models/{model}).
var (
	segmentParam = regexp.MustCompile(`\{[^/{}]*\}`)
	lastParam    = regexp.MustCompile(`\{[^/{}]*\}$`)
)

// ParseAt reads a perturbation's at: "METHOD /path#N" (the path a glob; {name} one segment, or
// the rest of the path at its end) or "job#N".
func ParseAt(at string) (Where, error) {
	m := atForm.FindStringSubmatch(at)
	if m == nil {
		return Where{}, fmt.Errorf("at %q must be METHOD /path#N (such as POST /v1/generate#1 or GET /v1/jobs/{id}#2) or job#N", at)
	}
	n, err := strconv.Atoi(m[3])
	if err != nil || n < 1 || n > MaxOrdinal {
		return Where{}, fmt.Errorf("at %q: the ordinal must be between 1 and %d", at, MaxOrdinal)
	}
	if m[1] == "" {
		return Where{Job: true, Ordinal: n}, nil
	}
	path := segmentParam.ReplaceAllString(lastParam.ReplaceAllString(m[2], "**"), "*")
	if msg := glob.Check(path); msg != "" {
		return Where{}, fmt.Errorf("at %q: the path %s", at, msg)
	}
	return Where{Method: strings.ToUpper(m[1]), Path: path, Ordinal: n}, nil
}

// Strikes reports whether the perturbation acts on requests or jobs, as opposed to only
// turning knobs.
func Strikes(p *Fault) bool { return p.Set == nil }

// CheckPerturbation validates a perturbation and fills in its defaults: exactly one of a
// fault, an outcome or knobs, striking where at or match says.
func CheckPerturbation(p *Fault) error {
	if p.At != "" {
		if p.Match != (RequestMatch{}) || p.Count != 0 || p.Probability != nil {
			return errors.New("at names one request or job: give it without match, count or probability")
		}
		w, err := ParseAt(p.At)
		if err != nil {
			return err
		}
		if w.Job && p.Outcome == "" {
			return fmt.Errorf("at %q names a job: give it an outcome", p.At)
		}
		if p.Outcome != "" && !w.Job && (w.Method != "POST" || w.Path != "/v1/generate") {
			return fmt.Errorf("at %q: an outcome strikes a generation, at POST /v1/generate#N or job#N", p.At)
		}
	}
	switch {
	case p.Set != nil:
		if p.At != "" || p.Match != (RequestMatch{}) || p.Count != 0 || p.Probability != nil || p.Outcome != "" || hasFault(p) {
			return errors.New("set turns knobs for the tenant and strikes nowhere: give it alone, without at, match, count, probability, an outcome or a fault")
		}
		return checkKnobs(p.Set)
	case p.Outcome != "":
		if hasFault(p) {
			return errors.New("outcome decides how a job ends: give it without a fault's action, status, delay, retry_after, download, after or advance")
		}
		if !ValidOutcome(p.Outcome) {
			return fmt.Errorf("outcome %q must be one of %s", p.Outcome, OutcomeNames)
		}
		if p.Code != "" {
			if p.Outcome != OutcomeFail {
				return fmt.Errorf("code names the failure of outcome fail, not of %s", p.Outcome)
			}
			if _, ok := knownFailureCodes[p.Code]; !ok {
				return fmt.Errorf("code %q is not a failure code (known: %s)", p.Code, strings.Join(failureCodeNames(), ", "))
			}
		}
		return checkWhere(p)
	}
	if err := checkWhere(p); err != nil {
		return err
	}
	return checkFault(p)
}

// checkWhere checks what match, count and probability select.
func checkWhere(p *Fault) error {
	if msg := checkMatch(p.Match, "match"); msg != "" {
		return errors.New(msg)
	}
	if p.Probability != nil && (*p.Probability < 0 || *p.Probability > 1) {
		return fmt.Errorf("probability must be between 0 and 1")
	}
	if p.Count < 0 {
		return fmt.Errorf("count must be >= 0 (0 means every matching request)")
	}
	if p.Match.Method != "" {
		p.Match.Method = strings.ToUpper(p.Match.Method)
	}
	return nil
}

// hasFault reports whether any member of a fault is given.
func hasFault(p *Fault) bool {
	return p.Action != "" || p.Status != 0 || p.Delay != 0 || p.RetryAfter != 0 || p.RetryAfterFormat != "" ||
		p.Download != nil || p.After || p.Advance != 0 || (p.Code != "" && p.Outcome == "")
}

func failureCodeNames() []string {
	names := make([]string, 0, len(knownFailureCodes))
	for c := range knownFailureCodes {
		names = append(names, c)
	}
	slices.Sort(names)
	return names
}

// checkKnobs checks the knobs a perturbation sets.
func checkKnobs(k *api.Knobs) error {
	switch {
	case *k == api.Knobs{}:
		return errors.New("set: give at least one of quote_ttl, url_ttl, concurrency, latency or evolution")
	case k.QuoteTTL < 0 || time.Duration(k.QuoteTTL) > MaxQuoteTTL:
		return fmt.Errorf("set.quote_ttl must be between 1ms and %s", MaxQuoteTTL)
	case k.URLTTL != 0 && (time.Duration(k.URLTTL) < MinURLTTL || time.Duration(k.URLTTL) > MaxURLTTL):
		return fmt.Errorf("set.url_ttl must be between %s and %s", MinURLTTL, MaxURLTTL)
	case k.Concurrency < 0 || k.Concurrency > MaxConcurrency:
		return fmt.Errorf("set.concurrency must be between 1 and %d", MaxConcurrency)
	case k.Latency < 0 || time.Duration(k.Latency) > MaxLatency:
		return fmt.Errorf("set.latency must be between 0s and %s (an answer waits in real time)", MaxLatency)
	}
	return nil
}

// checkFault checks a fault's action and members and fills in their defaults.
func checkFault(f *Fault) error {
	if f.RetryAfter < 0 {
		return fmt.Errorf("retry_after must be >= 0 seconds")
	}
	if f.RetryAfter > MaxRetryAfter {
		return fmt.Errorf("retry_after must be at most %d seconds (a day), not %d", MaxRetryAfter, f.RetryAfter)
	}
	if f.Delay < 0 || time.Duration(f.Delay) > 5*time.Minute {
		return fmt.Errorf("delay must be between 0 and 5m")
	}
	if f.Advance < 0 || time.Duration(f.Advance) > MaxAdvance {
		return fmt.Errorf("advance must be between 0s and %s", MaxAdvance)
	}
	if err := checkRetryAfterFormat(&f.RetryAfterFormat, "retry_after_format"); err != nil {
		return err
	}
	if f.RetryAfterFormat == api.RetryAfterSeconds {
		f.RetryAfterFormat = "" // the default, which the control API lists as absent
	}
	if f.Action == "" {
		switch {
		case f.Status != 0:
			f.Action = api.FaultError
		case f.Download != nil:
			f.Action = api.FaultDownload
		case f.Delay > 0 || f.Advance > 0:
			f.Action = api.FaultDelay
		default:
			return fmt.Errorf("give a status, an action (reset, malformed, truncated, gateway, download), a delay, an advance, an outcome or set")
		}
	}
	if f.Download != nil && f.Action != api.FaultDownload {
		return fmt.Errorf("download shapes the body of the download action only, not of %s", f.Action)
	}
	switch f.Action {
	case api.FaultError:
		if f.Status < 400 || f.Status > 599 {
			return fmt.Errorf("status %d must be an error status from 400 to 599", f.Status)
		}
		// The contract's 429 and 503 always say when to come back.
		if (f.Status == 429 || f.Status == 503) && f.RetryAfter == 0 {
			f.RetryAfter = 1
		}
	case api.FaultDelay:
		if f.Delay <= 0 && f.Advance <= 0 {
			return fmt.Errorf("a delay fault needs a positive delay (or an advance of the clock)")
		}
	case api.FaultGateway:
		switch f.Status {
		case 0:
			f.Status = 502
		case 502, 504:
		default:
			return fmt.Errorf("status %d: a gateway answers 502 or 504", f.Status)
		}
	case api.FaultDownload:
		if f.Download == nil {
			return fmt.Errorf("download: the download action needs a download shape such as {\"bytes_per_second\": 65536}")
		}
		if f.Download.URLTTL != 0 || f.Download.RejectAuthorization {
			return fmt.Errorf("download: url_ttl and reject_authorization sign a scenario's output links; a fault's download shapes a body only")
		}
		if err := CheckDownload(f.Download, "download"); err != nil {
			return err
		}
	case api.FaultReset, api.FaultMalformed, api.FaultTruncated:
	default:
		return fmt.Errorf("action %q must be one of %s", f.Action, strings.Join(Actions, ", "))
	}
	if f.After {
		switch f.Action {
		case api.FaultReset, api.FaultMalformed, api.FaultTruncated, api.FaultGateway:
		case api.FaultError:
			if f.Status < 500 {
				return fmt.Errorf("after: an answer lost after the service acted is a 5xx, not %d", f.Status)
			}
		default:
			return fmt.Errorf("after loses the service's answer: it goes with reset, malformed, truncated, gateway or a 5xx error, not %s", f.Action)
		}
	}
	return nil
}

// Tune returns the scenario with a plan's knobs turned, or sc itself when k turns none. The
// result shares what the knobs leave alone.
func Tune(sc *Scenario, k api.Knobs) *Scenario {
	if k == (api.Knobs{}) {
		return sc
	}
	t := *sc
	if k.QuoteTTL > 0 {
		ttl := time.Duration(k.QuoteTTL)
		t.Defaults.QuoteTTL = &ttl
		t.Overrides = eachOverride(t.Overrides, func(o *Override) {
			if o.QuoteTTL != nil {
				o.QuoteTTL = &ttl
			}
		})
	}
	if k.URLTTL > 0 {
		sign := func(d *Download) *Download {
			out := Download{}
			if d != nil {
				out = *d
			}
			out.URLTTL = k.URLTTL
			return &out
		}
		t.Defaults.Download = sign(t.Defaults.Download)
		t.Overrides = eachOverride(t.Overrides, func(o *Override) {
			if o.Download != nil {
				o.Download = sign(o.Download)
			}
		})
	}
	if k.Concurrency > 0 {
		t.Concurrency = append([]Concurrency{{Limit: k.Concurrency, Scope: ScopeAccount, Over: OverQueue}}, sc.Concurrency...)
	}
	if k.Latency > 0 {
		d := time.Duration(k.Latency)
		t.Latency = append([]Latency{{Match: RequestMatch{Path: "/v1/**"}, Delay: Dist{Kind: "fixed", Min: d, Max: d}}}, sc.Latency...)
	}
	if k.Evolution != nil {
		e := Evolution(*k.Evolution)
		t.Evolution = &e
	}
	return &t
}

// eachOverride is a copy of the overrides with change applied to each.
func eachOverride(os []Override, change func(*Override)) []Override {
	out := slices.Clone(os)
	for i := range out {
		change(&out[i])
	}
	return out
}
