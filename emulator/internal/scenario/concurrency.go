package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/glob"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// Concurrency scopes and what happens to a job over the limit.
const (
	ScopeAccount = "account"
	ScopeKey     = "key"
	OverQueue    = "queue"
	OverReject   = "reject"
)

// Concurrency runs at most Limit of the jobs it matches at once for each account (or each
// key): the rest wait in line, in the order they were made (Over queue), or are refused with
// 429 concurrency_limited (Over reject). The first rule that matches a job's model applies.
type Concurrency struct {
	// Match selects models; an empty match selects every model.
	Match ModelMatch `yaml:"match"`
	Limit int        `yaml:"limit"`
	// Scope is account (the default) or key.
	Scope string `yaml:"scope"`
	// Over is queue (the default) or reject.
	Over string `yaml:"over"`
}

// ConcurrencyFor returns the first concurrency rule that matches the model, and its index.
func (s *Scenario) ConcurrencyFor(m *catalog.Model) (int, *Concurrency, bool) {
	for i := range s.Concurrency {
		if c := &s.Concurrency[i]; c.Match.Matches(m) {
			return i, c, true
		}
	}
	return 0, nil, false
}

// Slot is the slot group a job of the rule counts against, made by an account through a key.
// The group is named by what the rule selects and whose jobs it counts, so that a scenario
// switched to another rule never puts its jobs in the line of a different selection, while the
// same rule with a new limit keeps its line. A key is named by a digest, so that snapshots and
// logs never hold it.
func (c *Concurrency) Slot(account, key string) jobs.Slot {
	var sel []string
	for _, f := range [...]struct{ name, v string }{{"model", c.Match.Model}, {"category", c.Match.Category}, {"output_type", c.Match.OutputType}} {
		if f.v != "" {
			sel = append(sel, f.name+"="+f.v)
		}
	}
	if len(sel) == 0 {
		sel = append(sel, "every model")
	}
	who := "account " + account
	if c.Scope == ScopeKey {
		sum := sha256.Sum256([]byte(key))
		who = "key " + hex.EncodeToString(sum[:6])
	}
	return jobs.Slot{Group: "concurrency[" + strings.Join(sel, " ") + "] " + who, Limit: c.Limit}
}

// checkConcurrency checks the concurrency rules and fills in their defaults.
func checkConcurrency(r *catalog.Reporter, seq *yaml.Node, rules []Concurrency) {
	for i := range rules {
		c := &rules[i]
		line := itemLine(seq, i)
		if c.Limit < 1 || c.Limit > jobs.MaxSlotLimit {
			r.At(line, "concurrency[%d]: limit must be from 1 to %d jobs at once", i, jobs.MaxSlotLimit)
		}
		if msg := glob.Check(c.Match.Model); msg != "" {
			r.At(line, "concurrency[%d].match.model %s", i, msg)
		}
		if t := c.Match.OutputType; t != "" && t != catalog.OutputImage && t != catalog.OutputVideo && t != catalog.OutputAudio {
			r.At(line, "concurrency[%d].match: output_type %q must be image, video or audio", i, t)
		}
		switch c.Scope {
		case "":
			c.Scope = ScopeAccount
		case ScopeAccount, ScopeKey:
		default:
			r.At(line, "concurrency[%d]: scope %q must be account or key", i, c.Scope)
		}
		switch c.Over {
		case "":
			c.Over = OverQueue
		case OverQueue, OverReject:
		default:
			r.At(line, "concurrency[%d]: over %q must be queue or reject", i, c.Over)
		}
	}
}
