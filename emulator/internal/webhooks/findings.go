package webhooks

import (
	"strconv"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
)

// The report's rules about a receiver, judged by the audit (Config.Audit); declared with the
// report's other rules.
const (
	SignatureUnchecked  = evidence.WebhookSignatureUnchecked
	TimestampUnchecked  = evidence.WebhookTimestampUnchecked
	SlowAcknowledgement = evidence.WebhookSlowAck
	ValidRefused        = evidence.WebhookValidRefused
)

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
		out = append(out, api.Finding{Rule: rule, Severity: evidence.Severity(rule), Reason: reason, Entries: []uint64{}})
	}
	return out
}
