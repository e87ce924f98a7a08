package webhooks

import (
	"strconv"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// The report's rules about a receiver, judged by the audit (Config.Audit).
const (
	SignatureUnchecked  = "webhook-signature-unchecked"
	TimestampUnchecked  = "webhook-timestamp-unchecked"
	SlowAcknowledgement = "webhook-slow-ack"
	ValidRefused        = "webhook-valid-refused"
)

// Rules are the webhook rules, as the report lists them.
var Rules = []api.Rule{
	{ID: SignatureUnchecked, Severity: api.SeverityError, Title: "A webhook receiver accepted a delivery with a wrong signature"},
	{ID: TimestampUnchecked, Severity: api.SeverityError, Title: "A webhook receiver accepted a delivery whose timestamp is older than 5 minutes"},
	{ID: SlowAcknowledgement, Severity: api.SeverityWarning, Title: "A webhook receiver took longer than 2 s to answer a delivery"},
	{ID: ValidRefused, Severity: api.SeverityWarning, Title: "A webhook receiver answered a valid delivery with a status other than 2xx"},
}

// findings are the audit's findings, one per rule: the first delivery that showed it, and how
// many did. Four rules at most, so bounded.
type findings struct {
	byRule map[string]*finding
	order  []string
}

type finding struct {
	reason string
	n      int
}

func (f *findings) add(rule, id, reason string) {
	if f.byRule == nil {
		f.byRule = map[string]*finding{}
	}
	if e := f.byRule[rule]; e != nil {
		e.n++
		return
	}
	f.byRule[rule] = &finding{reason: reason, n: 1}
	f.order = append(f.order, rule)
}

// Findings are the audit's findings, in the order first seen.
func (h *Hub) Findings() []api.Finding {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := []api.Finding{}
	for _, rule := range h.findings.order {
		f := h.findings.byRule[rule]
		reason := "the receiver " + f.reason
		if f.n > 1 {
			reason += " (and " + strconv.Itoa(f.n-1) + " more)"
		}
		sev := api.SeverityWarning
		for _, r := range Rules {
			if r.ID == rule {
				sev = r.Severity
			}
		}
		out = append(out, api.Finding{Rule: rule, Severity: sev, Reason: reason, Entries: []uint64{}})
	}
	return out
}
