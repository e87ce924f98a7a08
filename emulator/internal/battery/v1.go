package battery

import (
	"encoding/json"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// The tasks of battery v1: the embedded catalog's fastest image model, once for one image and
// once for four (so a partial result has something to drop), and a successor for the retired
// model case.
const (
	v1Model     = "fal-ai/flux/schnell"
	v1Successor = "fal-ai/flux/dev"
)

var (
	v1Input     = json.RawMessage(`{"prompt":"a lighthouse on a cliff during a storm"}`)
	v1FourInput = json.RawMessage(`{"prompt":"a watercolor hummingbird","num_images":4}`)
)

// v1Retiring is the scenario of the retired-model case: the task's model was deprecated a month
// before the tenant's clock starts (2026-01-01) and retired the day before, for its successor.
var v1Retiring = json.RawMessage(`{"name":"conformance-retiring","lifecycle":[{"match":{"model":"` + v1Model +
	`"},"deprecated_at":"2025-12-01T00:00:00Z","sunset":"2025-12-31T00:00:00Z","replacement":"` + v1Successor + `"}]}`)

// plan makes a plan of the perturbations given.
func plan(ps ...api.Perturbation) api.Plan {
	if ps == nil {
		ps = []api.Perturbation{}
	}
	return api.Plan{Perturbations: ps}
}

// dur is a duration in a perturbation.
func dur(d time.Duration) api.Duration { return api.Duration(d) }

// The rules most cases must not show. new-key-on-retry, expired-quote and quote-reused are of
// error severity and fail the verdict anyway; naming them says what the case is about.
const (
	ruleNewKey         = "new-key-on-retry"
	ruleRetryAfter     = "retry-after-ignored"
	ruleRetryUnchanged = "retry-unchanged"
	ruleQuoteReused    = "quote-reused"
	ruleExpiredQuote   = "expired-quote"
	ruleStaleLink      = "stale-link-refetched"
	ruleKeyOnLink      = "download-with-api-key"
	rulePollFast       = "poll-too-fast"
	ruleDeprecatedUsed = "deprecated-model-used"
)

// v1 is the first published battery. Its cases each strike the first request of a kind every
// client sends (a quote, a generation, a download), so a case tests what it names whatever the
// client's flow (wait=true or polling).
var v1 = &Battery{Name: "v1", Version: 1, Cases: []Case{
	{
		Name:          "baseline-idempotency-key-sent",
		Description:   "no adversity: the generation succeeds, its outputs are saved, and no request lacks an Idempotency-Key",
		Model:         v1Model,
		Input:         v1Input,
		Plan:          plan(),
		Expect:        Success,
		MaxJobs:       1,
		NeverAnswered: []string{"missing_idempotency_key"},
	},
	{
		Name:        "retry-ambiguous-5xx-same-key",
		Description: "POST /v1/generate answers 500 once: the client retries with the same Idempotency-Key",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultError, Status: 500, Code: "internal_error"}),
		Expect:      Success,
		Absent:      []string{ruleNewKey, api.InvariantOneCharge},
		MaxJobs:     1,
	},
	{
		Name:        "retry-5xx-after-core-same-key",
		Description: "POST /v1/generate makes the job, then answers 500: the retry with the same key gets that job back",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultError, Status: 500, Code: "internal_error", After: true}),
		Expect:      Success,
		Absent:      []string{ruleNewKey, api.InvariantOneCharge},
		MaxJobs:     1,
	},
	{
		Name:        "retry-gateway-502-same-key",
		Description: "POST /v1/generate answers a proxy's 502 HTML page: the client retries with the same key",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultGateway}),
		Expect:      Success,
		Absent:      []string{ruleNewKey, api.InvariantOneCharge},
		MaxJobs:     1,
	},
	{
		Name:        "retry-reset-before-core-same-key",
		Description: "the connection of POST /v1/generate is reset before the service acts: the client retries with the same key",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultReset}),
		Expect:      Success,
		Absent:      []string{ruleNewKey, api.InvariantOneCharge},
		MaxJobs:     1,
	},
	{
		Name:        "retry-reset-after-core-same-key",
		Description: "POST /v1/generate makes the job and holds the credits, then the connection is reset: the same key gets that job back",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultReset, After: true}),
		Expect:      Success,
		Absent:      []string{ruleNewKey, api.InvariantOneCharge, api.InvariantNothingHeld},
		MaxJobs:     1,
	},
	{
		Name:        "retry-truncated-after-core-same-key",
		Description: "POST /v1/generate makes the job, then its answer is cut short of its Content-Length: the client retries with the same key",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultTruncated, After: true}),
		Expect:      Success,
		Absent:      []string{ruleNewKey, api.InvariantOneCharge},
		MaxJobs:     1,
	},
	{
		Name:        "retry-malformed-after-core-same-key",
		Description: "POST /v1/generate makes the job, then answers 200 with broken JSON: the client retries with the same key",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultMalformed, After: true}),
		Expect:      Success,
		Absent:      []string{ruleNewKey, api.InvariantOneCharge},
		MaxJobs:     1,
	},
	{
		Name:        "retry-after-seconds-503",
		Description: "POST /v1/generate answers 503 with Retry-After: 1 (seconds): the client waits that long and retries with the same key",
		Model:       v1Model,
		Input:       v1Input,
		Plan: plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultError, Status: 503, Code: "service_unavailable",
			RetryAfter: 1, RetryAfterFormat: api.RetryAfterSeconds}),
		Expect:  Success,
		Absent:  []string{ruleRetryAfter, ruleNewKey},
		MaxJobs: 1,
	},
	{
		Name:        "retry-after-http-date-503",
		Description: "POST /v1/generate answers 503 with Retry-After as an HTTP date: the client waits until then and retries with the same key",
		Model:       v1Model,
		Input:       v1Input,
		Plan: plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultError, Status: 503, Code: "service_unavailable",
			RetryAfter: 1, RetryAfterFormat: api.RetryAfterDate}),
		Expect:  Success,
		Absent:  []string{ruleRetryAfter, ruleNewKey},
		MaxJobs: 1,
	},
	{
		Name:        "rate-limited-429-then-success",
		Description: "POST /v1/generate answers 429 rate_limited with Retry-After: 1: the client waits and generates",
		Model:       v1Model,
		Input:       v1Input,
		Plan: plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultError, Status: 429, Code: "rate_limited",
			RetryAfter: 1}),
		Expect:  Success,
		Absent:  []string{ruleRetryAfter},
		MaxJobs: 1,
	},
	{
		Name:        "quote-rate-limited-429-then-success",
		Description: "POST /v1/quotes answers 429 with Retry-After: 1: the client waits, quotes and generates",
		Model:       v1Model,
		Input:       v1Input,
		Plan: plan(api.Perturbation{At: "POST /v1/quotes#1", Action: api.FaultError, Status: 429, Code: "rate_limited",
			RetryAfter: 1}),
		Expect:  Success,
		Absent:  []string{ruleRetryAfter},
		MaxJobs: 1,
	},
	{
		Name:        "quote-unavailable-503-then-success",
		Description: "POST /v1/quotes answers 503 once: quoting is free, so the client asks again after Retry-After",
		Model:       v1Model,
		Input:       v1Input,
		Plan: plan(api.Perturbation{At: "POST /v1/quotes#1", Action: api.FaultError, Status: 503, Code: "service_unavailable",
			RetryAfter: 1}),
		Expect:  Success,
		Absent:  []string{ruleRetryAfter},
		MaxJobs: 1,
	},
	{
		Name:        "slow-answer-tolerated",
		Description: "POST /v1/generate answers whole but a second late: the client waits for it instead of giving up and generating again",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultDelay, Delay: dur(time.Second)}),
		Expect:      Success,
		Absent:      []string{ruleNewKey, api.InvariantOneCharge},
		MaxJobs:     1,
	},
	{
		Name:        "expired-quote-quoted-again",
		Description: "eleven minutes pass while POST /v1/generate is in flight, so its quote expires (422 quote_expired): the client quotes again and generates",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Advance: dur(11 * time.Minute)}),
		Expect:      Success,
		Absent:      []string{ruleQuoteReused, ruleRetryUnchanged},
		MaxJobs:     1,
	},
	{
		Name:        "failed-job-not-regenerated",
		Description: "the job fails (generation_failed): the client reports failure, nothing stays held, and it does not generate again blindly",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Outcome: "fail"}),
		Expect:      Failure,
		Absent:      []string{api.InvariantNothingHeld, api.InvariantOneCharge},
		MaxJobs:     1,
	},
	{
		Name:        "content-policy-job-not-regenerated",
		Description: "the job fails as it starts (content_policy_violation): the client reports failure and does not generate again",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Outcome: "content_policy"}),
		Expect:      Failure,
		Absent:      []string{api.InvariantNothingHeld},
		MaxJobs:     1,
	},
	{
		Name:        "expired-job-reported",
		Description: "the job never leaves the queue and ends expired (queue_timeout): the client waits for the end and reports failure",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Outcome: "expire"}),
		Expect:      Failure,
		Absent:      []string{api.InvariantNothingHeld},
		MaxJobs:     1,
	},
	{
		Name:        "refusal-not-retried",
		Description: "the generation is refused (422 content_policy_violation): the client reports failure without sending it again",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Outcome: "refuse"}),
		Expect:      Failure,
		Absent:      []string{ruleRetryUnchanged},
		MaxJobs:     1,
	},
	{
		Name:        "partial-result-accepted",
		Description: "four images are asked and some are filtered out (filtered_outputs): the client reports success with the ones returned",
		Model:       v1Model,
		Input:       v1FourInput,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Outcome: "partial"}),
		Expect:      Success,
		Absent:      []string{api.InvariantChargedUnseen},
		MaxJobs:     1,
	},
	{
		Name:        "slow-job-waited-for",
		Description: "the job outlasts the wait=true bound, so the generation answers 202: the client polls until it succeeds",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "POST /v1/generate#1", Outcome: "slow"}),
		Expect:      Success,
		Absent:      []string{rulePollFast, ruleNewKey},
		MaxJobs:     1,
	},
	{
		Name:        "unknown-status-and-member-tolerated",
		Description: "answers carry an undocumented member and the job passes through an undocumented status: the client ignores both",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{Set: &api.Knobs{Evolution: &api.Evolution{Members: true, Status: true}}}),
		Expect:      Success,
		MaxJobs:     1,
	},
	{
		Name:        "unknown-headers-and-output-type-tolerated",
		Description: "every answer gains an undocumented header and the catalog a model of an undocumented output type: the client ignores both",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{Set: &api.Knobs{Evolution: &api.Evolution{Headers: true, OutputType: true}}}),
		Expect:      Success,
		MaxJobs:     1,
	},
	{
		Name:        "expired-link-refreshed",
		Description: "output links are signed for a minute and five minutes pass before the first download (403): the client reads the job again for a fresh link",
		Model:       v1Model,
		Input:       v1Input,
		Plan: plan(api.Perturbation{Set: &api.Knobs{URLTTL: dur(time.Minute)}},
			api.Perturbation{At: "GET /files/**#1", Advance: dur(5 * time.Minute)}),
		Expect:  Success,
		Absent:  []string{ruleStaleLink, ruleKeyOnLink},
		MaxJobs: 1,
	},
	{
		Name:        "download-cut-resumed",
		Description: "the first download is cut after 100 bytes: the client fetches the rest (a Range or the whole file again) and saves the file whole",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "GET /files/**#1", Action: api.FaultDownload, Download: &api.Download{CutAfter: 100}}),
		Expect:      Success,
		MaxJobs:     1,
	},
	{
		Name:        "download-reset-retried",
		Description: "the connection of the first download is reset: the client fetches the file again instead of generating again",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(api.Perturbation{At: "GET /files/**#1", Action: api.FaultReset}),
		Expect:      Success,
		MaxJobs:     1,
	},
	{
		Name:        "retired-model-successor-followed",
		Description: "the task's model was retired (410 model_retired, with its replacement): the client moves to the successor and generates there",
		Model:       v1Model,
		Input:       v1Input,
		Plan:        plan(),
		Scenario:    v1Retiring,
		Expect:      Success,
		Absent:      []string{ruleRetryUnchanged, ruleDeprecatedUsed},
		MaxJobs:     1,
		JobModel:    v1Successor,
	},
}}
