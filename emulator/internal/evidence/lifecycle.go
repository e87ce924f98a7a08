package evidence

import (
	"fmt"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// announcement is what the judge knows of a deprecated model for one account: the first answer
// about it after its deprecation (which carried the Deprecation header, error or not), and the finding its
// later use makes.
type announcement struct {
	seq     uint64
	finding int // index in out, or -1 before the first use
	uses    int
}

// deprecatedUse judges deprecated-model-used: a quote or generation for a model, answered
// without an error, after an earlier answer about it had announced its deprecation (any answer
// about the model from its deprecated_at on carries the Deprecation header). The first answer
// is how a client learns of it; using the model again is ignoring it.
func (j *judge) deprecatedUse(e *api.JournalEntry, r route) {
	if j.in.DeprecatedAt == nil || e.Model == "" || e.Account == "" || e.Fault != "" {
		return
	}
	at, ok := j.in.DeprecatedAt(e.Model)
	if !ok || e.Time.Before(at) {
		return
	}
	if j.announced == nil {
		j.announced = map[string]*announcement{}
	}
	k := e.Account + "\x00" + e.Model
	a, seen := j.announced[k]
	if !seen {
		j.announced[k] = &announcement{seq: e.Seq, finding: -1}
		return
	}
	if (r != quoteRoute && r != generateRoute) || e.Status >= 400 {
		return
	}
	if a.finding < 0 {
		a.finding = j.add(DeprecatedModelUsed, "", a.seq)
		model, since := e.Model, at
		j.later = append(j.later, func() {
			j.out[a.finding].Reason = fmt.Sprintf("model %s was used %d time(s) after an answer announced its deprecation (Deprecation since %s); move to its successor-version Link",
				model, a.uses, since.UTC().Format(time.RFC3339))
		})
	}
	a.uses++
	j.addSeq(a.finding, e.Seq)
}
