package evidence

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// MaxRunFindings bounds the findings a whole-run report keeps; past it only the per-rule counts
// grow.
const MaxRunFindings = 1000

// Run keeps the findings of tenants that have gone (dropped, deleted or reset) since the
// emulator started, so a report of the whole run still has them. It keeps the first
// MaxRunFindings findings and exact counts per rule. It is safe for concurrent use.
type Run struct {
	mu       sync.Mutex
	findings []api.Finding
	counts   map[string]int
	examined int
	pending  sync.WaitGroup
}

// NewRun returns an empty record.
func NewRun() *Run { return &Run{counts: map[string]int{}} }

// Later runs judge away from the caller (which may hold a lock over every tenant) and folds its
// findings in; Report waits for every such fold.
func (r *Run) Later(tenant string, judge func() (examined int, findings []api.Finding)) {
	r.pending.Go(func() {
		examined, findings := judge()
		r.Fold(tenant, examined, findings)
	})
}

// Wait returns once every fold Later began is done.
func (r *Run) Wait() { r.pending.Wait() }

// Fold adds a gone tenant's findings.
func (r *Run) Fold(tenant string, examined int, findings []api.Finding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.examined += examined
	for _, f := range findings {
		r.counts[f.Rule]++
		if len(r.findings) < MaxRunFindings {
			f.Tenant = tenant
			r.findings = append(r.findings, f)
		}
	}
}

// Live is a tenant still in use, judged as the run report is made.
type Live struct {
	Tenant   string
	Examined int
	Findings []api.Finding
}

// Report is the whole run: the gone tenants' findings, then those of the live ones, within
// MaxRunFindings, with every finding counted.
func (r *Run) Report(live []Live) api.Report {
	r.Wait()
	r.mu.Lock()
	out := api.Report{Scope: "run", Examined: r.examined, Findings: slices.Clone(r.findings), Counts: make(map[string]int, len(Rules)), Rules: Rules}
	for k, v := range r.counts {
		out.Counts[k] = v
	}
	r.mu.Unlock()
	for _, l := range live {
		out.Examined += l.Examined
		for _, f := range l.Findings {
			out.Counts[f.Rule]++
			if len(out.Findings) < MaxRunFindings {
				f.Tenant = l.Tenant
				out.Findings = append(out.Findings, f)
			}
		}
	}
	if out.Findings == nil {
		out.Findings = []api.Finding{}
	}
	return out
}

// Tenant is one tenant's report.
func TenantReport(name string, examined int, findings []api.Finding) api.Report {
	if findings == nil {
		findings = []api.Finding{}
	}
	counts := make(map[string]int, len(Rules))
	for _, f := range findings {
		counts[f.Rule]++
	}
	return api.Report{Scope: "tenant", Tenant: name, Examined: examined, Findings: findings, Counts: counts, Rules: Rules}
}

// Markdown renders a report for a CI job summary or a terminal: a table of the rules that found
// something, then each finding on a line.
func ReportMarkdown(rep api.Report) string {
	var b strings.Builder
	title := "the whole run"
	if rep.Scope == "tenant" {
		title = "tenant " + rep.Tenant
	}
	total := 0
	for _, n := range rep.Counts {
		total += n
	}
	fmt.Fprintf(&b, "## Client report: %s\n\n", title)
	if total == 0 {
		fmt.Fprintf(&b, "No findings in %d requests and downloads examined.\n", rep.Examined)
		return b.String()
	}
	fmt.Fprintf(&b, "%d finding(s) in %d requests and downloads examined.\n\n", total, rep.Examined)
	b.WriteString("| rule | severity | findings | what it catches |\n|---|---|---:|---|\n")
	for _, r := range rep.Rules {
		if n := rep.Counts[r.ID]; n > 0 {
			fmt.Fprintf(&b, "| `%s` | %s | %d | %s |\n", r.ID, r.Severity, n, cell(r.Title))
		}
	}
	b.WriteString("\n")
	for _, f := range rep.Findings {
		var where []string
		if f.Tenant != "" {
			where = append(where, "tenant "+f.Tenant)
		}
		if len(f.Entries) > 0 {
			seqs := make([]string, len(f.Entries))
			for i, s := range f.Entries {
				seqs[i] = fmt.Sprint(s)
			}
			where = append(where, "journal entries "+strings.Join(seqs, ", "))
		}
		fmt.Fprintf(&b, "- **%s** `%s`: %s", f.Severity, f.Rule, cell(f.Reason))
		if len(where) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(where, ", "))
		}
		b.WriteString("\n")
	}
	if shown := len(rep.Findings); shown < total {
		fmt.Fprintf(&b, "\n%d more finding(s) not listed; the counts above are exact.\n", total-shown)
	}
	return b.String()
}

// cell keeps text on one line of a table or list.
func cell(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ", "|", `\|`).Replace(s)
}
