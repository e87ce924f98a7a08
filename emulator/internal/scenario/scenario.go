// Package scenario reads the YAML files that put the emulator into a condition — fast, realistic,
// flaky, slow, expiring, down, rate limited — and turns them into each job's course, the quote
// and output lifetimes, and the rate limits and HTTP faults that apply to each request.
package scenario

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/glob"
	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// Scenario is a loaded, validated scenario file. It is immutable and safe to share.
type Scenario struct {
	Name        string      `yaml:"name"`
	Description string      `yaml:"description"`
	Defaults    Rule        `yaml:"defaults"`
	Overrides   []Override  `yaml:"overrides"`
	RateLimits  []RateLimit `yaml:"rate_limits"`
	// Plan is the scenario's adversity: perturbations tried on every request, as PUT
	// /_emulator/plan takes them.
	Plan []Fault `yaml:"plan"`
	// Faults is the former spelling of Plan, read into it.
	Faults    []Fault     `yaml:"faults"`
	Latency   []Latency   `yaml:"latency"`
	Webhooks  *Webhooks   `yaml:"webhooks"`
	Lifecycle []Lifecycle `yaml:"lifecycle"`
	Evolution *Evolution  `yaml:"evolution"`
	// Concurrency limits how many jobs run at once per account or key (concurrency.go).
	Concurrency []Concurrency `yaml:"concurrency"`
	// Inputs has media inputs fetched under a hosted service's rules (inputs.go).
	Inputs *Inputs `yaml:"inputs"`
	// Source is the file the scenario came from.
	Source string `yaml:"-"`
	// Document is the text it was read from, so a snapshot can carry a scenario sent inline.
	Document []byte `yaml:"-"`

	webhook *webhooks.Config // Webhooks as webhooks.Parse read it
}

// Rule sets how jobs behave; a field left out keeps the value of the layer beneath (the
// scenario's defaults, then the catalog and the command line).
type Rule struct {
	Queue        *Dist             `yaml:"queue"`
	Run          *Dist             `yaml:"run"`
	QueueTimeout *time.Duration    `yaml:"queue_timeout"`
	FailureRate  *float64          `yaml:"failure_rate"`
	FailureCodes map[string]int    `yaml:"failure_codes"`
	FailureStage *string           `yaml:"failure_stage"`
	FailureAt    *Fraction         `yaml:"failure_at"`
	ExpireRate   *float64          `yaml:"expire_rate"`
	SlowRate     *float64          `yaml:"slow_rate"`
	QuoteTTL     *time.Duration    `yaml:"quote_ttl"`
	OutputTTL    *time.Duration    `yaml:"output_ttl"`
	Messages     map[string]string `yaml:"messages"`
	// Download shapes how the job's output files are served.
	Download *Download `yaml:"download"`
	// Moderation refuses generations and filters outputs.
	Moderation `yaml:",inline"`
}

// Override applies a Rule to the models it matches, after the defaults and earlier overrides.
type Override struct {
	Match ModelMatch `yaml:"match"`
	Rule  `yaml:",inline"`
}

// ModelMatch selects models; every field given must match. Model is a glob (package glob: *
// within a segment, ** across, so fal-ai/flux/** is every FLUX model).
type ModelMatch struct {
	Model      string `yaml:"model"`
	Category   string `yaml:"category"`
	OutputType string `yaml:"output_type"`
}

// Matches reports whether the model is selected.
func (mm ModelMatch) Matches(m *catalog.Model) bool {
	if m == nil {
		return mm.Model == "" && mm.Category == "" && mm.OutputType == ""
	}
	return (mm.Model == "" || glob.Match(mm.Model, m.ID)) &&
		(mm.Category == "" || mm.Category == m.Category) &&
		(mm.OutputType == "" || mm.OutputType == m.OutputType)
}

// RequestMatch selects requests for rate limits, latency rules and faults: the wire's
// FaultMatch, one shape for all three.
type RequestMatch = api.FaultMatch

// checkMatch says what is wrong with the patterns of a match, the problem beginning with its
// field's path under where; "" when nothing is.
func checkMatch(rm RequestMatch, where string) string {
	for _, p := range []struct{ name, pattern string }{{"path", rm.Path}, {"model", rm.Model}} {
		if msg := glob.Check(p.pattern); msg != "" {
			return fmt.Sprintf("%s.%s %s", where, p.name, msg)
		}
	}
	return ""
}

// NeedsModel reports whether matching a request needs to know its model.
func NeedsModel(rm RequestMatch) bool {
	return rm.Model != "" || rm.Category != "" || rm.OutputType != ""
}

// Selects reports whether a request (and its model, nil when it names none) is selected.
func Selects(rm RequestMatch, method, urlPath string, m *catalog.Model) bool {
	if rm.Method != "" && !strings.EqualFold(rm.Method, method) {
		return false
	}
	if rm.Path != "" && !glob.Match(rm.Path, urlPath) {
		return false
	}
	if NeedsModel(rm) {
		return m != nil && ModelMatch{rm.Model, rm.Category, rm.OutputType}.Matches(m)
	}
	return true
}

// LimitsNeedModel reports whether any rate limit or latency rule matches on the request's model.
func (s *Scenario) LimitsNeedModel() bool {
	for _, rl := range s.RateLimits {
		if NeedsModel(rl.Match) {
			return true
		}
	}
	for _, l := range s.Latency {
		if NeedsModel(l.Match) {
			return true
		}
	}
	return false
}

// RateLimit allows Limit requests per Per window to each key (or account) for the requests it
// matches; more answer 429. PerJob counts each job's requests apart (GET /v1/jobs/{id}), as a
// service that limits how often one job may be polled does.
type RateLimit struct {
	Match            RequestMatch  `yaml:"match" json:"match"`
	Limit            int           `yaml:"limit" json:"limit"`
	Per              time.Duration `yaml:"per" json:"-"`
	Scope            string        `yaml:"scope" json:"scope"`
	PerJob           bool          `yaml:"per_job" json:"per_job,omitempty"`
	RetryAfterFormat string        `yaml:"retry_after_format" json:"retry_after_format,omitempty"`
}

// Latency delays the answers to the requests it matches by a duration drawn per request; the
// first rule that matches applies.
type Latency struct {
	Match RequestMatch `yaml:"match"`
	Delay Dist         `yaml:"delay"`
}

// MaxLatency caps an answer's drawn delay.
const MaxLatency = 5 * time.Minute

// LatencyFor returns the index of the first latency rule that matches a request.
func (s *Scenario) LatencyFor(method, urlPath string, m *catalog.Model) (int, bool) {
	for i, l := range s.Latency {
		if Selects(l.Match, method, urlPath, m) {
			return i, true
		}
	}
	return 0, false
}

// Download shapes how a file's bytes go out: throttled to BytesPerSecond in chunks of
// ChunkBytes with Pause between them, cut (the connection closed) after CutAfter bytes, or
// with a Content-Length LengthDelta bytes off the truth. Zero fields do nothing.
type Download = api.Download

// Bounds of a download shape: a chunk is at most a MiB, a pause at most 10 seconds; a signed
// link lives from a second to a week (S3's longest presigned URL).
const (
	MaxChunkBytes = 1 << 20
	MaxPause      = 10 * time.Second
	MinURLTTL     = time.Second
	MaxURLTTL     = 7 * 24 * time.Hour
)

// CheckDownload validates a download shape; each problem begins with the path of its field
// under where.
func CheckDownload(d *Download, where string) error {
	switch {
	case *d == Download{}:
		return fmt.Errorf("%s: give at least one of bytes_per_second, chunk_bytes, pause, cut_after, length_delta or url_ttl", where)
	case d.BytesPerSecond < 0:
		return fmt.Errorf("%s.bytes_per_second must be at least 1 (absent: no throttle)", where)
	case d.ChunkBytes < 0 || d.ChunkBytes > MaxChunkBytes:
		return fmt.Errorf("%s.chunk_bytes must be between 1 and %d", where, MaxChunkBytes)
	case d.Pause < 0 || time.Duration(d.Pause) > MaxPause:
		return fmt.Errorf("%s.pause must be between 0s and %s", where, MaxPause)
	case d.CutAfter < 0:
		return fmt.Errorf("%s.cut_after must be at least 1 byte (absent: no cut)", where)
	case d.URLTTL != 0 && (time.Duration(d.URLTTL) < MinURLTTL || time.Duration(d.URLTTL) > MaxURLTTL):
		return fmt.Errorf("%s.url_ttl must be between %s and %s", where, MinURLTTL, MaxURLTTL)
	case d.RejectAuthorization && d.URLTTL == 0:
		return fmt.Errorf("%s.reject_authorization applies to signed links: give url_ttl too", where)
	}
	return nil
}

// Fault makes matching requests misbehave at the HTTP layer: the wire's Perturbation, one shape
// for a scenario file and the control API.
type Fault = api.Perturbation

// Actions lists the fault actions, in the order the documentation gives them.
var Actions = api.FaultActions

// Failure codes a scenario may draw; each is a job error code of the contract.
var knownFailureCodes = map[string]string{
	"generation_failed":        "the model failed to generate an output",
	"content_policy_violation": "the input or output was flagged by the content policy",
	"provider_timeout":         "the model provider did not answer in time",
	"provider_error":           "the model provider returned an error",
	"out_of_capacity":          "the model has no capacity for this job right now",
}

// DefaultMessage is the message a job error with a known code carries.
func DefaultMessage(code string) string {
	if m, ok := knownFailureCodes[code]; ok {
		return m
	}
	return "the generation failed"
}

// Parse reads a scenario file; name is used in problems and as the scenario's name when the
// file gives none.
func Parse(name string, data []byte) (*Scenario, error) {
	r := &catalog.Reporter{File: name}
	doc := catalog.ParseDocument(r, data)
	if doc == nil {
		return nil, r.Problems
	}
	s := &Scenario{}
	if !strict().Decode(r, doc.Content[0], s) {
		return nil, r.Problems.Sorted()
	}
	s.Source, s.Document = name, data
	if s.Name == "" {
		s.Name = strings.TrimSuffix(path.Base(name), path.Ext(name))
	}
	check(r, doc.Content[0], s)
	if len(r.Problems) > 0 {
		return nil, r.Problems.Sorted()
	}
	return s, nil
}

func check(r *catalog.Reporter, root *yaml.Node, s *Scenario) {
	checkWebhooks(r, root, s)
	checkRule(r, nodeOf(root, "defaults"), "defaults", &s.Defaults)
	overrides := nodeOf(root, "overrides")
	for i := range s.Overrides {
		line := itemLine(overrides, i)
		o := &s.Overrides[i]
		if o.Match == (ModelMatch{}) {
			r.At(line, "overrides[%d]: match names no model, category or output_type; put rules for every model under defaults", i)
		}
		if msg := glob.Check(o.Match.Model); msg != "" {
			r.At(line, "overrides[%d].match.model %s", i, msg)
		}
		if o.Match.OutputType != "" && o.Match.OutputType != catalog.OutputImage && o.Match.OutputType != catalog.OutputVideo && o.Match.OutputType != catalog.OutputAudio {
			r.At(line, "overrides[%d]: output_type %q must be image, video or audio", i, o.Match.OutputType)
		}
		checkRule(r, overrides.Content[i], fmt.Sprintf("overrides[%d]", i), &o.Rule)
	}
	limits := nodeOf(root, "rate_limits")
	for i := range s.RateLimits {
		rl := &s.RateLimits[i]
		line := itemLine(limits, i)
		if rl.Limit < 1 {
			r.At(line, "rate_limits[%d]: limit must be at least 1", i)
		}
		if msg := checkMatch(rl.Match, fmt.Sprintf("rate_limits[%d].match", i)); msg != "" {
			r.At(line, "%s", msg)
		}
		if rl.Per <= 0 {
			r.At(line, "rate_limits[%d]: per must be a positive duration such as 1m", i)
		}
		switch rl.Scope {
		case "":
			rl.Scope = "key"
		case "key", "account":
		default:
			r.At(line, "rate_limits[%d]: scope %q must be key or account", i, rl.Scope)
		}
		if err := checkRetryAfterFormat(&rl.RetryAfterFormat, fmt.Sprintf("rate_limits[%d].retry_after_format", i)); err != nil {
			r.At(line, "%v", err)
		}
	}
	latency := nodeOf(root, "latency")
	for i := range s.Latency {
		l := &s.Latency[i]
		line := itemLine(latency, i)
		if msg := checkMatch(l.Match, fmt.Sprintf("latency[%d].match", i)); msg != "" {
			r.At(line, "%s", msg)
		}
		switch {
		case l.Delay.Kind == "":
			r.At(line, "latency[%d].delay: give a duration or a distribution (fixed, uniform or lognormal)", i)
		case l.Delay.Kind == "scale":
			r.At(line, "latency[%d].delay: scale multiplies a job's catalog timing; an answer has none, so give fixed, uniform or lognormal", i)
		case l.Delay.Max > MaxLatency || l.Delay.P99 > MaxLatency:
			r.At(line, "latency[%d].delay: at most %s (an answer waits in real time)", i, MaxLatency)
		}
	}
	checkLifecycle(r, nodeOf(root, "lifecycle"), s.Lifecycle)
	checkConcurrency(r, nodeOf(root, "concurrency"), s.Concurrency)
	checkInputs(r, nodeOf(root, "inputs"), s.Inputs)
	for _, list := range []struct {
		key string
		ps  []Fault
	}{{"plan", s.Plan}, {"faults", s.Faults}} {
		seq := nodeOf(root, list.key)
		for i := range list.ps {
			if err := CheckPerturbation(&list.ps[i]); err != nil {
				r.At(itemLine(seq, i), "%s[%d]: %v", list.key, i, err)
			}
		}
	}
	s.Plan, s.Faults = append(s.Plan, s.Faults...), nil
}

// checkRule checks one rule; n is its mapping node (nil when absent), so each problem is
// reported at the line of the field it is about.
func checkRule(r *catalog.Reporter, n *yaml.Node, where string, rule *Rule) {
	at := func(field string) int {
		if n == nil {
			return 0
		}
		if v := nodeOf(n, field); v != nil {
			return v.Line
		}
		return n.Line
	}
	line := at("")
	rate := func(name string, v *float64) {
		if v != nil && (*v < 0 || *v > 1) {
			r.At(at(name), "%s: %s must be between 0 and 1", where, name)
		}
	}
	rate("failure_rate", rule.FailureRate)
	rate("expire_rate", rule.ExpireRate)
	rate("slow_rate", rule.SlowRate)
	checkModeration(rate, rule.Moderation)
	sum := 0.0
	for _, v := range []*float64{rule.FailureRate, rule.ExpireRate, rule.SlowRate} {
		if v != nil {
			sum += *v
		}
	}
	if sum > 1 {
		r.At(line, "%s: failure_rate + expire_rate + slow_rate is %.2f, more than 1", where, sum)
	}
	for _, code := range slices.Sorted(maps.Keys(rule.FailureCodes)) {
		if _, ok := knownFailureCodes[code]; !ok {
			r.At(at("failure_codes"), "%s: unknown failure code %q (known: %s)", where, code, strings.Join(slices.Sorted(maps.Keys(knownFailureCodes)), ", "))
		}
		if rule.FailureCodes[code] < 0 {
			r.At(at("failure_codes"), "%s: failure code weights must be >= 0", where)
		}
	}
	if rule.FailureStage != nil && *rule.FailureStage != "running" && *rule.FailureStage != "queued" {
		r.At(at("failure_stage"), "%s: failure_stage %q must be queued or running", where, *rule.FailureStage)
	}
	for _, d := range []struct {
		name  string
		value *time.Duration
	}{{"queue_timeout", rule.QueueTimeout}, {"quote_ttl", rule.QuoteTTL}, {"output_ttl", rule.OutputTTL}} {
		if d.value != nil && *d.value <= 0 {
			r.At(at(d.name), "%s: %s must be a positive duration", where, d.name)
		}
	}
	if rule.Download != nil {
		if err := CheckDownload(rule.Download, where+".download"); err != nil {
			r.At(at("download"), "%v", err)
		}
	}
}

// checkRetryAfterFormat checks a retry_after_format and fills in its default.
func checkRetryAfterFormat(format *string, where string) error {
	switch *format {
	case "":
		*format = api.RetryAfterSeconds
	case api.RetryAfterSeconds, api.RetryAfterDate:
	default:
		return fmt.Errorf("%s %q must be seconds or date", where, *format)
	}
	return nil
}

func nodeOf(root *yaml.Node, key string) *yaml.Node {
	if root == nil || key == "" {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == key {
			return root.Content[i+1]
		}
	}
	return nil
}

func itemLine(seq *yaml.Node, i int) int {
	if seq != nil && i < len(seq.Content) {
		return seq.Content[i].Line
	}
	return 0
}
