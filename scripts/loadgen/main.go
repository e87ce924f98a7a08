// Command loadgen drives the emulator for scripts/loadbench: a sustained quote-and-generate load
// on the real clock (sustain), 100,000 flows on one key on the manual clock (flows), 100,000
// retained jobs and one clock advance that finishes them (jobs), jobs with 1 MiB inputs
// (inputs), 10,000 concurrent wait=true generations (waiters), and start-up time (startup).
//
// It talks only to loopback addresses, bounds every loop in count and time, and prints its
// figures as lines "row|FIGURE|MEASURED|TARGET|BASELINE" that loadbench turns into its table;
// progress and details go to standard error.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const usage = `usage: loadgen COMMAND [flags]

  sustain  -url URL -pid PID   quote + generate in a loop on the real clock; lateness, RSS
  jobs     -url URL -pid PID   make 100,000 jobs on the manual clock, time the advance that ends them
  waiters  -url URL -pid PID   hold 10,000 wait=true generations on the manual clock; RSS
  flows    -url URL -pid PID   100,000 quote + generate flows on one key, manual clock; 429s, RSS
  inputs   -url URL -pid PID   make 360 jobs of 1 MiB inputs on the manual clock; RSS
  quotes   -url URL -pid PID   quote only, unpaced on one key, real clock, 60 s; 429s, RSS
  budget   -url URL -pid PID   fill 40 tenants with 1 MB-input jobs, then quotes, to the memory budget; RSS
  startup  -emulator BIN -baseline BIN   exec to first 200 from GET /v1/models, median of starts
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "sustain":
		err = sustain(ctx, args)
	case "jobs":
		err = retained(ctx, args)
	case "waiters":
		err = waiters(ctx, args)
	case "inputs":
		err = inputs(ctx, args)
	case "flows":
		err = flows(ctx, args)
	case "quotes":
		err = quoteOnly(ctx, args)
	case "budget":
		err = budget(ctx, args)
	case "startup":
		err = startup(ctx, args)
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadgen %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// target is the emulator under load: its address, its process (for RSS) and the key to use.
type target struct {
	addr string // 127.0.0.1:PORT
	pid  int
}

// flags is a load command's flag set: -url and -pid of the target, and flags bounded to a range
// that their help states and parse checks, so that both say the same bounds.
type flags struct {
	*flag.FlagSet
	url    *string
	pid    *int
	checks []func() error
}

func newFlags(command string) *flags {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	return &flags{FlagSet: fs,
		url: fs.String("url", "", "the emulator's base URL, http://127.0.0.1:PORT"),
		pid: fs.Int("pid", 0, "the emulator's process id, for its resident memory")}
}

// intIn declares an int flag that takes lo to hi.
func (f *flags) intIn(name string, value, lo, hi int, usage string) *int {
	return bounded(f, name, f.Int(name, value, usage), lo, hi)
}

// durationIn declares a duration flag that takes lo to hi.
func (f *flags) durationIn(name string, value, lo, hi time.Duration, usage string) *time.Duration {
	return bounded(f, name, f.Duration(name, value, usage), lo, hi)
}

func bounded[T int | time.Duration](f *flags, name string, p *T, lo, hi T) *T {
	want := fmt.Sprintf("%v to %v", lo, hi)
	f.Lookup(name).Usage += ", " + want
	f.checks = append(f.checks, func() error {
		if *p < lo || *p > hi {
			return fmt.Errorf("-%s: want %s", name, want)
		}
		return nil
	})
	return p
}

// parse parses args, checks the bounded flags, and reads the target.
func (f *flags) parse(args []string) (target, error) {
	if err := f.Parse(args); err != nil {
		return target{}, err
	}
	for _, check := range f.checks {
		if err := check(); err != nil {
			return target{}, err
		}
	}
	return parseTarget(*f.url, *f.pid)
}

func parseTarget(rawURL string, pid int) (target, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Port() == "" {
		return target{}, fmt.Errorf("-url %q: want http://127.0.0.1:PORT", rawURL)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return target{}, fmt.Errorf("-url %q: only loopback addresses are load-tested", rawURL)
	}
	if pid <= 0 {
		return target{}, errors.New("-pid: the emulator's process id is needed to read its memory")
	}
	if _, err := rssKB(pid); err != nil {
		return target{}, err
	}
	return target{addr: u.Host, pid: pid}, nil
}

// rssKB reads a process's resident set size in KiB from /proc.
func rssKB(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS for process %d", pid)
}

// row prints one line of loadbench's table.
func row(figure, measured, target, baseline string) {
	fmt.Printf("row|%s|%s|%s|%s\n", figure, measured, target, baseline)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "loadgen: "+format+"\n", args...)
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + " ms" }

func mb(kb int64) string { return strconv.FormatFloat(float64(kb)/1024, 'f', 1, 64) + " MB" }

// sorted returns a sorted copy.
func sorted(d []time.Duration) []time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

// spread summarises a sample of durations as "p50 / p99 / max".
func spread(sample []time.Duration) string {
	s := sorted(sample)
	return ms(percentile(s, 50)) + " / " + ms(percentile(s, 99)) + " / " + ms(percentile(s, 100))
}

// api holds what a generation needs to say: the model, its input and the key.
type api struct {
	model string
	input string // a JSON object
}

func (a api) quoteBody() []byte {
	return []byte(`{"model":"` + a.model + `","input":` + a.input + `}`)
}

func (a api) generateBody(quoteID string) []byte {
	return []byte(`{"model":"` + a.model + `","input":` + a.input + `,"quote_id":"` + quoteID + `"}`)
}

// lighthouse is the input the runs generate with, and allKey the headers of the catalog's key
// that may do everything.
const lighthouse = `{"prompt":"a lighthouse on a cliff at dusk, long exposure","num_images":1}`

var allKey = []string{"Authorization", "Bearer mg_test_all"}

// flow makes one quote on c and spends it on a generation under the idempotency key; with wait
// the generation waits for its job (answer 200). It returns the answer's body and the instant
// its headers arrived; refused(err) tells a 429 from either call.
func (a api) flow(c *conn, headers []string, key string, wait bool) ([]byte, time.Time, error) {
	id, _, err := a.quote(c, headers)
	if err != nil {
		return nil, time.Time{}, err
	}
	path := "/v1/generate"
	if wait {
		path += "?wait=true"
	}
	gen := []string{headers[0], headers[1], "Idempotency-Key", key}
	status, body, at, err := c.do("POST", path, gen, a.generateBody(id))
	if err != nil || status != 200 && (wait || status != 202) {
		return nil, at, cmpErr(err, "POST "+path, status, body)
	}
	return body, at, nil
}

// openAdmin dials the connection for the control API and, with fund, gives acct_all credits
// enough for any bounded run, so that a long one does not end in 402s.
func openAdmin(addr string, fund bool) (*conn, error) {
	admin, err := dial(addr, 8192)
	if err != nil {
		return nil, err
	}
	if fund {
		if _, err := control(admin, "PUT", "/_emulator/accounts/acct_all", `{"credits":1000000000000}`); err != nil {
			admin.close()
			return nil, err
		}
	}
	return admin, nil
}

// dialPool opens n connections to addr; on failure it closes the ones it opened.
func dialPool(addr string, n int) ([]*conn, error) {
	pool := make([]*conn, n)
	for i := range pool {
		c, err := dial(addr, 8192)
		if err != nil {
			closeAll(pool[:i])
			return nil, err
		}
		pool[i] = c
	}
	return pool, nil
}

func closeAll(pool []*conn) {
	for _, c := range pool {
		c.close()
	}
}

// fanOut runs do for every index from from to to, spread over the pool's connections with one
// goroutine each; a connection stops at its first error, and the errors are joined.
func fanOut(pool []*conn, from, to int, do func(c *conn, i int) error) error {
	errs := make([]error, len(pool))
	var wg sync.WaitGroup
	for w, c := range pool {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from + w; i < to; i += len(pool) {
				if errs[w] = do(c, i); errs[w] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// quote asks for a quote on c and returns its id and credits.
func (a api) quote(c *conn, headers []string) (id string, credits int64, err error) {
	status, body, _, err := c.do("POST", "/v1/quotes", headers, a.quoteBody())
	if err != nil {
		return "", 0, err
	}
	if status != 200 {
		return "", 0, statusError("POST /v1/quotes", status, body)
	}
	var q struct {
		QuoteID string `json:"quote_id"`
		Credits int64  `json:"credits"`
	}
	if err := json.Unmarshal(body, &q); err != nil || q.QuoteID == "" {
		return "", 0, fmt.Errorf("POST /v1/quotes: unexpected body %.200s", body)
	}
	return q.QuoteID, q.Credits, nil
}

// job is what the load generator reads of a job.
type job struct {
	ID         string  `json:"id"`
	Status     string  `json:"status"`
	FinishedAt *string `json:"finished_at"`
}

// adminHeaders are the headers of control API calls.
var adminHeaders []string

// control calls the control API and checks for 200.
func control(c *conn, method, uri, body string) ([]byte, error) {
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	status, resp, _, err := c.do(method, uri, adminHeaders, b)
	if err != nil {
		return nil, err
	}
	if status != 200 {
		return nil, statusError(method+" "+uri, status, resp)
	}
	return resp, nil
}
