package jobs

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// Export lists every job held, in creation order, with its plan and outputs, so Import puts
// each back exactly where it stood. Ended jobs carry their place in the order they ended. The
// outputs of a job created as Remade are left out (nil), as they would be made again.
func (e *Engine) Export() []api.SnapshotJob {
	e.mu.Lock()
	defer e.mu.Unlock()
	all := make([]*job, 0, e.held)
	for _, acc := range e.byAccount {
		for j := acc.head; j != nil; j = j.next {
			all = append(all, j)
		}
	}
	slices.SortFunc(all, func(x, y *job) int { return cmp.Compare(x.live.Seq, y.live.Seq) })
	order := make(map[*job]int, e.counts.Total())
	n := 0
	for j := e.doneHead; j != nil; j = j.nextDone {
		n++
		order[j] = n
	}
	out := make([]api.SnapshotJob, len(all))
	for i, j := range all {
		p := j.Plan
		sj := api.SnapshotJob{
			ID: j.ID, Account: j.Account, Model: j.Model, QuoteID: j.QuoteID, Credits: j.Credits, Input: j.Input,
			Status: string(j.status), CreatedAt: stampNanos(j.createdAt), StartedAt: stampNanos(j.startedAt),
			FinishedAt: stampNanos(j.finishedAt), Progress: int(j.progress), Forced: j.forced,
			Plan: api.SnapshotPlan{Queue: api.Duration(p.Queue), Run: api.Duration(p.Run), QueueTimeout: api.Duration(p.QueueTimeout),
				Ending: api.SnapshotEnding{Status: string(p.Ending.Status), Code: p.Ending.Code, Message: p.Ending.Message, At: p.Ending.At, InQueue: p.Ending.InQueue},
				Forced: p.Forced, Struck: p.Struck, Filtered: p.Filtered, InputsExpireAt: stampTime(p.InputsExpireAt),
				MediaInputs: slices.Clone(p.MediaInputs)},
			OutputTTL:   api.Duration(j.OutputTTL),
			FinishOrder: order[j],
		}
		if j.err != nil {
			sj.Error = &api.JobError{Code: j.err.Code, Message: j.err.Message}
		}
		if l := j.line; l != nil && !j.status.Terminal() {
			sj.Slot = &api.SnapshotSlot{Group: j.Slot.Group, Limit: j.Slot.Limit}
			if !l.waiting {
				sj.Slot.AdmittedAt = stampNanos(l.admitted)
			}
		}
		if !j.Remade || len(j.Outputs) == 0 {
			sj.Outputs = SnapshotOutputs(j.Outputs)
		}
		out[i] = sj
	}
	return out
}

// SnapshotOutputs lists outputs as a snapshot does: never nil, so that a job without outputs
// is told from one whose outputs were left to be made again.
func SnapshotOutputs(outs []Output) []api.SnapshotOutput {
	list := make([]api.SnapshotOutput, len(outs))
	for i, o := range outs {
		list[i] = api.SnapshotOutput{Type: o.Type, File: path.Base(o.Path), ContentType: o.ContentType,
			Width: o.Width, Height: o.Height, Duration: o.Duration, SizeBytes: o.SizeBytes, Format: o.Format,
			Seed: strconv.FormatUint(o.Seed, 10), Label: o.Label, Opening: base64.StdEncoding.EncodeToString([]byte(o.Opening))}
	}
	return list
}

// stampNanos formats a job's time, or "" when unset.
// stampTime is an instant as a snapshot writes it, or "" for none.
func stampTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func stampNanos(n int64) string {
	if n == unset {
		return ""
	}
	return timeOf(n).Format(time.RFC3339Nano)
}

// fileName is an output's name under its job.
var fileName = regexp.MustCompile(`^[0-9]{1,4}\.[a-z0-9]{1,8}$`)

// Import puts exported jobs into an empty engine, with their files under prefix (the world's
// /files/ or /files/{tenant}/), and schedules the live ones' next steps. The ledger is left as
// it is: the credits held for live jobs come back with the accounts. Each problem is reported
// with a JSON Pointer relative to the list; a job with one is left out. remade, when not nil,
// holds the outputs made again from the model and input of the jobs that left them out (see
// New.Remade), which are taken as they are.
func (e *Engine) Import(in []api.SnapshotJob, remade [][]Output, prefix string, report func(ptr, msg string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.byID) == 0 {
		e.byID = make(map[string]*job, len(in))
	}
	var done []*job
	ended := make(map[int]bool, len(in))
	live := 0
	now := e.clock.Now().UnixNano()
	for i, sj := range in {
		at := "/" + strconv.Itoa(i)
		j, field, msg := decodeJob(sj, prefix)
		admitted := int64(unset)
		if j != nil && !j.status.Terminal() {
			admitted, field, msg = decodeSlot(j, sj.Slot, now)
			if msg != "" {
				j = nil
			}
		}
		if j == nil {
			report(at+field, msg)
			continue
		}
		if remade != nil && remade[i] != nil {
			j.Outputs, j.Remade = remade[i], true
		}
		if e.byID[j.ID] != nil {
			report(at+"/id", "job "+j.ID+" appears twice")
			continue
		}
		if j.status.Terminal() {
			if sj.FinishOrder < 1 || ended[sj.FinishOrder] {
				report(at+"/finish_order", "an ended job needs a finish_order of its own, from 1")
				continue
			}
			ended[sj.FinishOrder] = true
		} else {
			live++
		}
		e.track(j)
		if j.status.Terminal() {
			j.live.At = int64(sj.FinishOrder) // the order it ended, until the finished queue is built
			done = append(done, j)
			continue
		}
		if j.Slot.Group != "" {
			e.restoreSlot(j, admitted)
			continue
		}
		j.live.At = nextStep(j)
		e.live.Push(&j.live)
	}
	for _, g := range e.groups {
		e.admit(g, now) // a document edited by hand may leave a slot free before a line
	}
	if len(in) > max(e.maxJobs, live) {
		report("", "holds "+strconv.Itoa(len(in))+" jobs, more than the bound of "+strconv.Itoa(e.maxJobs))
	}
	slices.SortFunc(done, func(x, y *job) int { return cmp.Compare(x.live.At, y.live.At) })
	for _, j := range done {
		j.live.At = 0
		if e.doneTail != nil {
			e.doneTail.nextDone = j
		} else {
			e.doneHead = j
		}
		e.doneTail = j
	}
	e.arm()
	e.changed()
}

// nextStep is when a live job next moves on, as Create and step schedule it.
func nextStep(j *job) int64 {
	if j.status == Running {
		return addNanos(j.startedAt, runFor(j.Plan))
	}
	return queuedStep(j, j.start())
}

// decodeSlot reads a live job's slot into it: when it got one (by now, the snapshot's time),
// or unset while it waits; a problem is given as decodeJob gives one.
func decodeSlot(j *job, s *api.SnapshotSlot, now int64) (int64, string, string) {
	if s == nil {
		return unset, "", ""
	}
	switch {
	case s.Group == "":
		return 0, "/slot/group", "a slot needs its group"
	case s.Limit < 1 || s.Limit > MaxSlotLimit:
		return 0, "/slot/limit", "a limit from 1 to " + strconv.Itoa(MaxSlotLimit)
	}
	j.Slot = Slot{Group: s.Group, Limit: s.Limit}
	if s.AdmittedAt == "" {
		if j.status == Running {
			return 0, "/slot/admitted_at", "a running job holds its slot"
		}
		return unset, "", ""
	}
	t, err := time.Parse(time.RFC3339Nano, s.AdmittedAt)
	if err != nil {
		return 0, "/slot/admitted_at", "not an RFC 3339 time"
	}
	if t.UnixNano() < j.createdAt {
		return 0, "/slot/admitted_at", "a job gets its slot after it is created"
	}
	if t.UnixNano() > now {
		return 0, "/slot/admitted_at", "a job holds its slot from an instant the clock has reached, not a later one"
	}
	return t.UnixNano(), "", ""
}

// restoreSlot puts a restored live job back under its limit: holding a slot since admitted,
// or last in its group's line (jobs come in creation order). Callers hold e.mu.
func (e *Engine) restoreSlot(j *job, admitted int64) {
	if admitted == unset {
		e.enqueue(j)
		if d, ok := j.deadline(); ok {
			j.live.At = d
			e.live.Push(&j.live)
		}
		return
	}
	g := e.group(j.Slot.Group)
	j.line = &lineState{group: g, admitted: admitted}
	g.holders = append(g.holders, j)
	j.live.At = nextStep(j)
	e.live.Push(&j.live)
}

// decodeJob turns an exported job back into the engine's record, or says what is wrong with
// it: the field's pointer (relative to the job) and why.
func decodeJob(sj api.SnapshotJob, prefix string) (*job, string, string) {
	status := Status(sj.Status)
	if sj.ID == "" || sj.Account == "" {
		return nil, "/id", "a job needs an id and an account"
	}
	if !status.Valid() {
		return nil, "/status", "not a job status"
	}
	times := [3]int64{unset, unset, unset}
	for i, f := range [...]struct{ name, v string }{{"created_at", sj.CreatedAt}, {"started_at", sj.StartedAt}, {"finished_at", sj.FinishedAt}} {
		if f.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, f.v)
		if err != nil {
			return nil, "/" + f.name, "not an RFC 3339 time"
		}
		times[i] = t.UnixNano()
	}
	var inputsExpire time.Time
	if sj.Plan.InputsExpireAt != "" {
		t, err := time.Parse(time.RFC3339Nano, sj.Plan.InputsExpireAt)
		if err != nil {
			return nil, "/plan/inputs_expire_at", "not an RFC 3339 time"
		}
		inputsExpire = t.UTC()
	}
	if len(sj.Plan.MediaInputs) > MaxMediaInputs {
		return nil, "/plan/media_inputs", "a job records at most " + strconv.Itoa(MaxMediaInputs) + " media inputs"
	}
	for i, in := range sj.Plan.MediaInputs {
		short := len(in.Member) <= 256 && len(in.Pointer) <= 512 && len(in.Source) <= 32 && len(in.Upload) <= 256 && len(in.Failure) <= 64
		if in.Member == "" || in.Source == "" || len(in.URL) > MaxMediaInputURL || !short {
			return nil, "/plan/media_inputs/" + strconv.Itoa(i), "a media input names its member and source, a URL of at most " + strconv.Itoa(MaxMediaInputURL) + " bytes, and short texts beside it"
		}
	}
	switch {
	case times[0] == unset:
		return nil, "/created_at", "a job needs its created_at"
	case status == Running && times[1] == unset:
		return nil, "/started_at", "a running job needs its started_at"
	case status == Queued && times[1] != unset:
		return nil, "/started_at", "a queued job has not started"
	case status.Terminal() != (times[2] != unset):
		return nil, "/finished_at", "an ended job, and only an ended job, has a finished_at"
	case sj.Progress < 0 || sj.Progress > 100:
		return nil, "/progress", "hundredths from 0 to 100"
	case sj.Credits < 0:
		return nil, "/credits", "credits cannot be negative"
	case sj.Plan.Queue < 0 || sj.Plan.Run < 0 || sj.Plan.QueueTimeout < 0 || sj.OutputTTL < 0:
		return nil, "/plan", "durations cannot be negative"
	case sj.Plan.Filtered < 0 || sj.Plan.Filtered > MaxFiltered:
		return nil, "/plan/filtered", "filtered outputs from 0 to " + strconv.Itoa(MaxFiltered)
	}
	switch Status(sj.Plan.Ending.Status) {
	case Succeeded, Failed, Expired, "":
	default:
		return nil, "/plan/ending/status", "a plan ends as succeeded, failed or expired"
	}
	// The document's inputs come as the snapshot writes them, compact; only one with space in
	// it (edited by hand) is compacted again.
	input := sj.Input
	if len(input) == 0 {
		return nil, "/input", "not JSON"
	}
	if bytes.ContainsAny(input, " \t\r\n") {
		var b bytes.Buffer
		if err := json.Compact(&b, sj.Input); err != nil {
			return nil, "/input", "not JSON"
		}
		input = b.Bytes()
	}
	j := &job{status: status, createdAt: times[0], startedAt: times[1], finishedAt: times[2], progress: uint8(sj.Progress), forced: sj.Forced}
	j.New = New{ID: sj.ID, Account: sj.Account, Model: sj.Model, QuoteID: sj.QuoteID, Credits: sj.Credits, Input: input,
		Plan: Plan{Queue: time.Duration(sj.Plan.Queue), Run: time.Duration(sj.Plan.Run), QueueTimeout: time.Duration(sj.Plan.QueueTimeout),
			Ending: Ending{Status: Status(sj.Plan.Ending.Status), Code: sj.Plan.Ending.Code, Message: sj.Plan.Ending.Message, At: sj.Plan.Ending.At, InQueue: sj.Plan.Ending.InQueue},
			Forced: sj.Plan.Forced, Struck: sj.Plan.Struck, Filtered: sj.Plan.Filtered, InputsExpireAt: inputsExpire,
			MediaInputs: slices.Clone(sj.Plan.MediaInputs)},
		OutputTTL: time.Duration(sj.OutputTTL)}
	if sj.Error != nil {
		j.err = &Error{Code: sj.Error.Code, Message: sj.Error.Message}
	}
	for k, o := range sj.Outputs {
		seed, err := strconv.ParseUint(o.Seed, 10, 64)
		if err != nil {
			return nil, "/outputs/" + strconv.Itoa(k) + "/seed", "not a 64-bit number as text"
		}
		if !fileName.MatchString(o.File) {
			return nil, "/outputs/" + strconv.Itoa(k) + "/file", "not a file name such as 0.png"
		}
		opening, err := base64.StdEncoding.DecodeString(o.Opening)
		if err != nil {
			return nil, "/outputs/" + strconv.Itoa(k) + "/opening", "not base64"
		}
		j.Outputs = append(j.Outputs, Output{Output: api.Output{Type: o.Type, ContentType: o.ContentType, Width: o.Width, Height: o.Height,
			Duration: o.Duration, SizeBytes: o.SizeBytes}, Path: prefix + sj.ID + "/" + o.File, Format: o.Format, Seed: seed, Label: o.Label,
			Opening: string(opening)})
	}
	return j, "", ""
}

// MaxFiltered bounds the outputs a restored job may say were filtered out: no model makes more
// outputs than this from one input.
const MaxFiltered = 1000
