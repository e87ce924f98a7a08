// Coverage counts which of the contract's hard cases a client's tests exercised: each
// problem code on each endpoint (as docs/openapi.json documents them), each way a job ends, the flows that are easy to leave untested
// (an idempotent replay, a wait that ran out, a ranged or expired download) and each kind of
// injected fault. Counts are kept as counters, not read from the journal, so a journal that has
// wrapped around loses nothing; a world's counters also add to the run's, which outlive resets
// and dropped tenants.

package evidence

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mediagen/mediagen-emulator/docs"
	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/glob"
)

// The groups a case belongs to.
const (
	GroupErrors = "errors"
	GroupJobs   = "jobs"
	GroupFlows  = "flows"
	GroupFaults = "faults"
)

// MaxExtra bounds the cases a Counts adds beyond the contract's list (a failure code a scenario
// or a forced failure made up, an error on a path no route answers); past it such cases go
// uncounted.
const MaxExtra = 200

// Case is one case of the list.
type Case struct {
	ID, Group string
}

// Index is a case's place in the list.
type Index int

// boundCodes are the problems that answer the emulator's own bounds (its tenancy, its memory,
// what it keeps) rather than a rule of the service's contract; the document lists them, but a
// client's suite does not set out to meet them, so they are not cases of the list (one seen is
// counted after it). An entry is a code, or a route, status and code.
var boundCodes = map[string]bool{"invalid_tenant": true, "too_many_tenants": true, "memory_budget_exhausted": true,
	"too_many_quotes": true, "POST /v1/generate 404 job_not_found": true,
	// Answered only while inputs are fetched (an opt-in, docs/inputs.md): a suite that requires
	// every case of an endpoint must not find new ones it never opted into. Seen, they count.
	"input_url_refused": true, "input_too_large": true}

// optInRoutes are the /v1 operations that answer only under an opt-in; for the same reason
// as boundCodes, their problems are not cases of the list, and are counted once seen.
var optInRoutes = map[string]bool{"POST /v1/uploads": true}

// endpoint is a /v1 operation and the problems it can answer, as "STATUS code".
type endpoint struct {
	route    string
	problems []string
}

// endpointsOf reads, from the OpenAPI document, the problems each /v1 operation documents: for
// each of its error responses, in the document's order, the problem codes its description
// names (in backticks, among ProblemCode's examples), less boundCodes. HEAD is counted as GET.
// The document is read once, in one pass that keeps only these members: it runs as the
// package starts, so before the emulator's first answer.
func endpointsOf(doc string) ([]endpoint, error) {
	var d struct {
		Paths      pathsInOrder `json:"paths"`
		Components struct {
			Responses map[string]response `json:"responses"`
			Schemas   struct {
				ProblemCode struct {
					Examples []string `json:"examples"`
				} `json:"ProblemCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := jsonv2.Unmarshal([]byte(doc), &d); err != nil {
		return nil, err
	}
	codes := map[string]bool{}
	for _, c := range d.Components.Schemas.ProblemCode.Examples {
		codes[c] = true
	}
	var out []endpoint
	for _, p := range d.Paths {
		if !strings.HasPrefix(p.path, "/v1/") {
			continue
		}
		for _, method := range [...]string{"get", "post", "put", "delete"} {
			raw, ok := p.ops[method]
			var op operation
			if !ok || jsonv2.Unmarshal(raw, &op) != nil {
				continue
			}
			e := endpoint{route: strings.ToUpper(method) + " " + p.path}
			if optInRoutes[e.route] {
				continue
			}
			statuses := slices.Collect(maps.Keys(op.Responses))
			slices.Sort(statuses) // three digits each: text order is numeric order
			for _, status := range statuses {
				r := op.Responses[status]
				for r.Ref != "" {
					r = d.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
				}
				if n, err := strconv.Atoi(status); err != nil || n < 400 {
					continue
				}
				for _, m := range backticked.FindAllStringSubmatch(r.Description, -1) {
					p := status + " " + m[1]
					if codes[m[1]] && !boundCodes[m[1]] && !boundCodes[e.route+" "+p] && !slices.Contains(e.problems, p) {
						e.problems = append(e.problems, p)
					}
				}
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// response is what endpointsOf reads of an OpenAPI response.
type response struct {
	Ref         string `json:"$ref"`
	Description string `json:"description"`
}

// operation is what endpointsOf reads of an OpenAPI operation.
type operation struct {
	Responses map[string]response `json:"responses"`
}

// pathsInOrder are an OpenAPI document's paths in the document's order, which a map loses.
type pathsInOrder []struct {
	path string
	ops  map[string]jsontext.Value // an operation by its method, and the path's parameters
}

// UnmarshalJSONFrom reads the paths object member by member.
func (ps *pathsInOrder) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return fmt.Errorf("paths is not an object")
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String() // before the next read voids tok
		var ops map[string]jsontext.Value
		if err := jsonv2.UnmarshalDecode(dec, &ops); err != nil {
			return err
		}
		*ps = append(*ps, struct {
			path string
			ops  map[string]jsontext.Value
		}{name, ops})
	}
	_, err := dec.ReadToken()
	return err
}

var backticked = regexp.MustCompile("`([a-z_]+)`")

// Job endings: "job succeeded", "job canceled", and a status with an error code otherwise.
var jobEndings = []string{"succeeded", "failed generation_failed", "failed content_policy_violation", "failed provider_timeout",
	"failed provider_error", "failed out_of_capacity", "expired queue_timeout", "canceled"}

// The endings of a job whose media input fails it as it starts, when inputs are fetched
// (docs/inputs.md), are counted once seen, as "job failed input_expired" and so on, and are
// not cases of the list: a suite that requires "job *" must not find ones it never opted into.

// FaultKinds are the actions a fault rule can take, each a case "fault {kind}".
var FaultKinds = api.FaultActions

// The flows, each one case; set once, as the list is built.
var (
	Replay          Index // "idempotent replay": a generation answered again for its Idempotency-Key
	WaitTimedOut    Index // "wait timed out": a wait=true generation answered 202
	RangedDownload  Index // "ranged download": a file answered 206
	ExpiredDownload Index // "expired download": a file answered 410
	Refused         Index // "generation refused": a generation refused by the content policy
	Partial         Index // "partial result": a job made with some outputs filtered out
	ModelDeprecated Index // "model deprecated": an answer about a deprecated model
	ModelRetired    Index // "model retired": an answer about a retired model
	LinkExpired     Index // "link expired": a signed output link refused for being past its expiry
	LinkRefreshed   Index // "link refreshed": a file fetched at a sound link after its link had expired
	QueuedBehind    Index // "queued behind a concurrency limit": a job made to wait for a slot
	// The forward-compatibility mode's kinds, each counted when an answer carried it.
	EvolutionMember     Index // "evolution member": an answer's objects carried an undocumented member
	EvolutionHeader     Index // "evolution header": an answer carried an undocumented header
	EvolutionStatus     Index // "evolution status": a job showed the undocumented status
	EvolutionOutputType Index // "evolution output_type": an answer listed a model of an undocumented output type
)

// errorKey finds an error case without building its id.
type errorKey struct {
	route  string
	status int
	code   string
}

var (
	list    []Case
	byID    = map[string]Index{}
	byError = map[errorKey]Index{}
	byJob   = map[[2]string]Index{}
	byFault = map[string]Index{}
)

func add(id, group string) Index {
	if _, dup := byID[id]; dup {
		panic("coverage: case listed twice: " + id)
	}
	i := Index(len(list))
	list = append(list, Case{ID: id, Group: group})
	byID[id] = i
	return i
}

func init() {
	endpoints, err := endpointsOf(docs.OpenAPI)
	if err != nil {
		panic("coverage: the embedded OpenAPI document does not read: " + err.Error())
	}
	for _, e := range endpoints {
		for _, p := range e.problems {
			status, code, _ := strings.Cut(p, " ")
			n, err := strconv.Atoi(status)
			if err != nil {
				panic("coverage: bad problem " + p)
			}
			byError[errorKey{e.route, n, code}] = add(e.route+" "+p, GroupErrors)
		}
	}
	for _, end := range jobEndings {
		status, code, _ := strings.Cut(end, " ")
		byJob[[2]string{status, code}] = add("job "+end, GroupJobs)
	}
	Replay = add("idempotent replay", GroupFlows)
	WaitTimedOut = add("wait timed out", GroupFlows)
	RangedDownload = add("ranged download", GroupFlows)
	ExpiredDownload = add("expired download", GroupFlows)
	Refused = add("generation refused", GroupFlows)
	Partial = add("partial result", GroupFlows)
	ModelDeprecated = add("model deprecated", GroupFlows)
	ModelRetired = add("model retired", GroupFlows)
	LinkExpired = add("link expired", GroupFlows)
	LinkRefreshed = add("link refreshed", GroupFlows)
	QueuedBehind = add("queued behind a concurrency limit", GroupFlows)
	EvolutionMember = add("evolution member", GroupFlows)
	EvolutionHeader = add("evolution header", GroupFlows)
	EvolutionStatus = add("evolution status", GroupFlows)
	EvolutionOutputType = add("evolution output_type", GroupFlows)
	for _, k := range FaultKinds {
		byFault[k] = add("fault "+k, GroupFaults)
	}
}

// Cases is the contract's list, in order: errors by endpoint, jobs, flows, faults.
func Cases() []Case { return list[:len(list):len(list)] }

// Counts counts the cases seen in one world, or over the run. It is safe for concurrent use, and
// counting a listed case takes two atomic additions (this Counts and its parent's) and nothing
// else.
type Counts struct {
	n      []atomic.Int64
	parent *Counts

	mu    sync.Mutex
	extra map[string]*extraCase // cases seen that the list lacks; guarded by mu
	order []string              // their ids in the order first seen; guarded by mu
}

type extraCase struct {
	group string
	n     int64
}

// New returns zeroed counts that also add every case to parent, when it is not nil.
func NewCounts(parent *Counts) *Counts {
	return &Counts{n: make([]atomic.Int64, len(list)), parent: parent}
}

// Hit counts a case of the list.
func (c *Counts) Hit(i Index) {
	for ; c != nil; c = c.parent {
		c.n[i].Add(1)
	}
}

// Error counts an error answer: route is the method and path template of the route that
// matched, such as "GET /v1/jobs/{id}", or "GET *" when none did.
func (c *Counts) Error(route string, status int, code string) {
	if i, ok := byError[errorKey{route, status, code}]; ok {
		c.Hit(i)
		return
	}
	if route == "" {
		route = "*"
	}
	c.hitExtra(route+" "+strconv.Itoa(status)+" "+code, GroupErrors)
}

// JobEnded counts a job's end: its terminal status and, for failed and expired jobs, its error
// code.
func (c *Counts) JobEnded(status, code string) {
	if status == "succeeded" || status == "canceled" {
		code = ""
	}
	if i, ok := byJob[[2]string{status, code}]; ok {
		c.Hit(i)
		return
	}
	id := "job " + status
	if code != "" {
		id += " " + code
	}
	c.hitExtra(id, GroupJobs)
}

// Fault counts an injected fault of a kind (its action).
func (c *Counts) Fault(kind string) {
	if i, ok := byFault[kind]; ok {
		c.Hit(i)
		return
	}
	c.hitExtra("fault "+kind, GroupFaults)
}

func (c *Counts) hitExtra(id, group string) {
	for ; c != nil; c = c.parent {
		c.mu.Lock()
		if e := c.extra[id]; e != nil {
			e.n++
		} else if len(c.order) < MaxExtra {
			if c.extra == nil {
				c.extra = map[string]*extraCase{}
			}
			c.extra[id] = &extraCase{group: group, n: 1}
			c.order = append(c.order, id)
		}
		c.mu.Unlock()
	}
}

// Snapshot returns every case with its count: the list in order, then the cases seen beyond
// it in the order first seen.
func (c *Counts) Snapshot() []api.CoverageCase {
	out := make([]api.CoverageCase, 0, len(list)+len(c.order))
	for i, k := range list {
		out = append(out, api.CoverageCase{ID: k.ID, Group: k.Group, Count: c.n[i].Load()})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range c.order {
		e := c.extra[id]
		out = append(out, api.CoverageCase{ID: id, Group: e.group, Count: e.n})
	}
	return out
}

// Glob is a require pattern in the one glob language (package glob).
type Glob string

// NewGlob makes a require pattern.
func NewGlob(pattern string) Glob { return Glob(pattern) }

// ParseGlob is a require pattern a client sent, checked: 1 to glob.MaxLen characters of the one
// pattern language.
func ParseGlob(pattern string) (Glob, error) {
	if msg := glob.Check(pattern); pattern == "" || msg != "" {
		return "", fmt.Errorf("a require pattern is 1 to %d characters; * matches within a segment, ** across", glob.MaxLen)
	}
	return Glob(pattern), nil
}

// Match reports whether a case id matches.
func (g Glob) Match(id string) bool { return glob.Match(string(g), id) }

// Report builds the answer of GET /_emulator/coverage from counts: how many cases were
// exercised, and which cases matching a require pattern were not.
func CoverageReport(scope, tenant string, c *Counts, require []Glob) api.Coverage {
	cases := c.Snapshot()
	out := api.Coverage{Scope: scope, Tenant: tenant, Total: len(cases), Cases: cases, RequiredMissing: []string{}}
	for _, k := range cases {
		if k.Count > 0 {
			out.Exercised++
			continue
		}
		for _, g := range require {
			if g.Match(k.ID) {
				out.RequiredMissing = append(out.RequiredMissing, k.ID)
				break
			}
		}
	}
	return out
}

// Short renders coverage as a few lines for a terminal: the cases exercised in all and
// per group, then the required cases never exercised.
func CoverageShort(c api.Coverage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "emulator coverage (%s): %d of %d cases exercised\n", where(c), c.Exercised, c.Total)
	var groups []string
	seen, total := map[string]int{}, map[string]int{}
	for _, k := range c.Cases {
		if _, ok := total[k.Group]; !ok {
			groups = append(groups, k.Group)
		}
		total[k.Group]++
		if k.Count > 0 {
			seen[k.Group]++
		}
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "  %-8s %3d of %d\n", g, seen[g], total[g])
	}
	if len(c.RequiredMissing) > 0 {
		fmt.Fprintf(&b, "required but never exercised (%d):\n", len(c.RequiredMissing))
		for _, id := range c.RequiredMissing {
			fmt.Fprintf(&b, "  %s\n", id)
		}
	}
	return b.String()
}

// where names what a coverage answer counts: the whole run or one tenant.
func where(c api.Coverage) string {
	if c.Scope == "run" {
		return "the whole run"
	}
	return "tenant " + c.Tenant
}

// Markdown renders a coverage answer as a short markdown document, for a CI job's summary: a
// heading with the totals, the required cases never exercised, and a table of every case.
func CoverageMarkdown(c api.Coverage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Emulator coverage (%s): %d of %d cases exercised\n\n", where(c), c.Exercised, c.Total)
	if len(c.RequiredMissing) > 0 {
		fmt.Fprintf(&b, "**Required but never exercised (%d):**\n\n", len(c.RequiredMissing))
		for _, id := range c.RequiredMissing {
			fmt.Fprintf(&b, "- `%s`\n", id)
		}
		b.WriteString("\n")
	}
	b.WriteString("| case | group | count |\n|---|---|---:|\n")
	for _, k := range c.Cases {
		fmt.Fprintf(&b, "| `%s` | %s | %d |\n", strings.ReplaceAll(k.ID, "|", `\|`), k.Group, k.Count)
	}
	return b.String()
}

// maxCaseID bounds the id of a case a snapshot restores beyond the list.
const maxCaseID = 1024

// Seen returns the cases counted at least once, for a snapshot: the list's in order, then the
// others in the order first seen.
func (c *Counts) Seen() []api.CoverageCase {
	out := []api.CoverageCase{}
	for _, k := range c.Snapshot() {
		if k.Count > 0 {
			out = append(out, k)
		}
	}
	return out
}

// Restore sets fresh counts to a snapshot's, as Seen lists them. The parent (the run's counts)
// is left as it is: what another run saw is not this run's. Each problem is reported with a
// JSON Pointer relative to the list, and that case is left out.
func (c *Counts) Restore(cases []api.CoverageCase, report func(ptr, msg string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[string]bool, len(cases))
	for i, k := range cases {
		at := "/" + strconv.Itoa(i)
		i, listed := byID[k.ID]
		switch {
		case k.Count < 0:
			report(at+"/count", "a count cannot be negative")
		case seen[k.ID]:
			report(at+"/id", "case "+strconv.Quote(k.ID)+" appears twice")
		case listed && list[i].Group != k.Group:
			report(at+"/group", "case "+strconv.Quote(k.ID)+" is in group "+list[i].Group)
		case listed:
			c.n[i].Store(k.Count)
		case k.ID == "" || len(k.ID) > maxCaseID:
			report(at+"/id", "a case needs an id of at most "+strconv.Itoa(maxCaseID)+" bytes")
		case k.Group != GroupErrors && k.Group != GroupJobs && k.Group != GroupFlows && k.Group != GroupFaults && k.Group != GroupWebhooks:
			report(at+"/group", "errors, jobs, flows, faults or webhooks")
		case len(c.order) >= MaxExtra:
			report(at, "more cases beyond the contract's list than the bound of "+strconv.Itoa(MaxExtra))
		default:
			if c.extra == nil {
				c.extra = map[string]*extraCase{}
			}
			c.extra[k.ID] = &extraCase{group: k.Group, n: k.Count}
			c.order = append(c.order, k.ID)
		}
		seen[k.ID] = true
	}
}
