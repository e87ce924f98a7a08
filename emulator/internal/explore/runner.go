// Package explore searches for the adversity a client does not survive: it draws adversity
// plans from a seed (Draw), runs a command under one in a fresh tenant and reads the verdict
// (Target.Run), and proposes plans one step smaller than a failing one (Candidates), which the
// explore command shrinks greedily to the smallest that still fails.
package explore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// Header names the control API reads.
const (
	headerTenant     = "X-Emulator-Tenant"
	headerAdminToken = "X-Emulator-Admin-Token"
)

// MaxOutput bounds the command output an Outcome keeps: the last this many bytes, where a
// failing client says what went wrong.
const MaxOutput = 64 << 10

// maxAnswer bounds a control API answer read into memory; a bundle carries a tenant's whole
// snapshot, which the emulator itself bounds well below this.
const maxAnswer = 256 << 20

// NoExit, as Bundle's exit, asks for a verdict that leaves the command's exit status out.
const NoExit = -1

// TimedOutExit is the exit status a run's command is given when it was killed at its timeout,
// as timeout(1) gives it.
const TimedOutExit = 124

// Target is the emulator runs happen on.
type Target struct {
	URL, AdminToken string
	// Client sends the control API's requests; nil is http.DefaultClient.
	Client *http.Client
}

// RunSpec is one run of a command in a fresh tenant under a plan.
type RunSpec struct {
	Tenant  string
	Plan    api.Plan
	Command []string
	// Env is added to the command's environment after the MEDIAGEN_* variables the run sets.
	Env []string
	// Timeout kills the command's process group this long after it started; 0 is no limit.
	Timeout time.Duration
	// JudgeExit counts a non-zero exit status as a failure; a plan forcing a terminal outcome
	// leaves it out, since a correct client may rightly report that failure.
	JudgeExit bool
	// Keep leaves the tenant in place after judging, for a bundle to be read from it; the
	// caller drops it with DropTenant.
	Keep bool
}

// Outcome is what one run gave.
type Outcome struct {
	Tenant   string
	ExitCode int
	// TimedOut says the command was killed at its timeout; ExitCode is then TimedOutExit.
	TimedOut bool
	Verdict  api.Verdict
	// Output is the command's standard output and error together, the last MaxOutput bytes.
	Output []byte
}

// Run applies s.Plan to s.Tenant, runs s.Command against it, and returns the tenant's verdict.
// An error means the run could not be made or judged (the emulator unreachable, the plan
// refused, the command not startable), not that the client failed.
func (t Target) Run(ctx context.Context, s RunSpec) (Outcome, error) {
	out := Outcome{Tenant: s.Tenant}
	if len(s.Command) == 0 {
		return out, errors.New("no command to run")
	}
	plan := s.Plan
	if plan.Perturbations == nil {
		plan.Perturbations = []api.Perturbation{} // the plan endpoint wants a list
	}
	body, err := json.Marshal(plan)
	if err != nil {
		return out, err
	}
	if err := t.Call(ctx, http.MethodPut, "/_emulator/plan", s.Tenant, body, nil); err != nil {
		return out, fmt.Errorf("applying the plan to tenant %s: %w", s.Tenant, err)
	}
	if !s.Keep {
		defer func() { _ = t.DropTenant(context.WithoutCancel(ctx), s.Tenant) }()
	}
	code, timedOut, output, err := t.runCommand(ctx, s)
	out.ExitCode, out.TimedOut, out.Output = code, timedOut, output
	if err != nil {
		return out, err
	}
	exit := NoExit
	if s.JudgeExit || timedOut {
		exit = code
	}
	v, err := t.Verdict(ctx, s.Tenant, exit)
	if err != nil {
		return out, err
	}
	if timedOut {
		markTimedOut(&v, s.Timeout)
	}
	out.Verdict = v
	return out, nil
}

// markTimedOut says in the verdict's exit failure that the command was killed, not that it
// exited: a client that hangs is a failure whatever the plan.
func markTimedOut(v *api.Verdict, timeout time.Duration) {
	reason := "timed out after " + timeout.String()
	v.Failed = true
	for i := range v.Failures {
		if v.Failures[i].Kind == api.FailureExit {
			v.Failures[i].Reason = reason
			return
		}
	}
	v.Failures = append(v.Failures, api.VerdictFailure{Kind: api.FailureExit, Reason: reason})
}

// runCommand runs the command in its own process group with the run's environment and returns
// its exit status, whether it timed out, and the tail of its output.
func (t Target) runCommand(ctx context.Context, s RunSpec) (int, bool, []byte, error) {
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if s.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, s.Timeout)
	}
	defer cancel()
	cmd := exec.CommandContext(runCtx, s.Command[0], s.Command[1:]...)
	cmd.Env = append(os.Environ(), t.env(s.Tenant)...)
	cmd.Env = append(cmd.Env, s.Env...)
	tail := &tailBuffer{max: MaxOutput}
	cmd.Stdout, cmd.Stderr = tail, tail
	inGroup(cmd)
	// A grandchild that keeps the output pipe open must not hold the run past its kill.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	reap(cmd)
	timedOut := s.Timeout > 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	if ctx.Err() != nil {
		return 0, false, tail.Bytes(), ctx.Err()
	}
	if timedOut {
		return TimedOutExit, true, tail.Bytes(), nil
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, false, tail.Bytes(), nil
	case errors.As(err, &ee):
		return exitStatus(ee), false, tail.Bytes(), nil
	case errors.Is(err, exec.ErrWaitDelay):
		return cmd.ProcessState.ExitCode(), false, tail.Bytes(), nil
	default:
		return 0, false, tail.Bytes(), fmt.Errorf("cannot run %s: %w", s.Command[0], err)
	}
}

// env is what the run adds to the command's environment: where the emulator is and a key bound
// to the tenant, so a client configured as in production needs no change.
func (t Target) env(tenant string) []string {
	env := []string{
		"MEDIAGEN_EMULATOR_URL=" + t.URL,
		"MEDIAGEN_API_KEY=mg_test_all." + tenant,
		"MEDIAGEN_TENANT=" + tenant,
	}
	if t.AdminToken != "" {
		env = append(env, "MEDIAGEN_ADMIN_TOKEN="+t.AdminToken)
	}
	return env
}

// Verdict reads the tenant's verdict; exit is the command's exit status, or NoExit to leave it
// out of the judgement.
func (t Target) Verdict(ctx context.Context, tenant string, exit int) (api.Verdict, error) {
	var v api.Verdict
	path := "/_emulator/verdict"
	if exit != NoExit {
		path += "?exit=" + strconv.Itoa(exit)
	}
	if err := t.Call(ctx, http.MethodGet, path, tenant, nil, &v); err != nil {
		return v, fmt.Errorf("reading the verdict of tenant %s: %w", tenant, err)
	}
	return v, nil
}

// Bundle reads the tenant's bundle for the run of the seed: its plan, verdict (exit judged as
// Verdict's), report and snapshot.
func (t Target) Bundle(ctx context.Context, tenant string, seed int64, run, exit int) (api.Bundle, error) {
	var b api.Bundle
	q := url.Values{"seed": {strconv.FormatInt(seed, 10)}, "run": {strconv.Itoa(run)}}
	if exit != NoExit {
		q.Set("exit", strconv.Itoa(exit))
	}
	if err := t.Call(ctx, http.MethodGet, "/_emulator/bundle?"+q.Encode(), tenant, nil, &b); err != nil {
		return b, fmt.Errorf("reading the bundle of tenant %s: %w", tenant, err)
	}
	return b, nil
}

// DropTenant removes the tenant and all it holds; one already gone is no error.
func (t Target) DropTenant(ctx context.Context, tenant string) error {
	err := t.Call(ctx, http.MethodDelete, "/_emulator/tenants/"+url.PathEscape(tenant), "", nil, nil)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return nil
	}
	return err
}

// StatusError is a control API answer other than 2xx: its status and what its problem body
// says.
type StatusError struct {
	Status int
	Detail string
}

// Error says the status and the problem's detail.
func (e *StatusError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("the emulator answered %d", e.Status)
	}
	return fmt.Sprintf("the emulator answered %d: %s", e.Status, e.Detail)
}

// Call sends one control request for the tenant ("" for none) and reads a 2xx answer's JSON
// into into (when not nil).
func (t Target) Call(ctx context.Context, method, path, tenant string, body []byte, into any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(t.URL, "/")+path, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tenant != "" {
		req.Header.Set(headerTenant, tenant)
	}
	if t.AdminToken != "" {
		req.Header.Set(headerAdminToken, t.AdminToken)
	}
	c := t.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return err
	}
	if len(data) > maxAnswer {
		return fmt.Errorf("the answer to %s %s is over %d bytes", method, path, maxAnswer)
	}
	if resp.StatusCode/100 != 2 {
		var p struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(data, &p)
		return &StatusError{Status: resp.StatusCode, Detail: p.Detail}
	}
	if into == nil {
		return nil
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("the answer to %s %s does not read: %w", method, path, err)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it; the command's output and error write to
// it from two goroutines.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// Write appends p, dropping the oldest bytes past max.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// Bytes is a copy of what is kept.
func (b *tailBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf)
}
