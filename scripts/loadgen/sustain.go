package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// sustain runs quote + generate in a loop from -conns connections at -rate generations a
// second (0: as fast as they go) for -seconds on the real clock, while -probes connections
// each generate with wait=true in a loop to observe when jobs turn terminal. Answers 429 (a
// bound refused the flow) are counted, not failures: the loop goes on.
//
// With -bare the target is loadbench-baseline answering the emulator's bytes: no control API,
// no probes; it prints "rate|FLOWS/S" for loadbench to pass back as -vs to the emulator's run,
// whose flows/s is then also given as a ratio to it.
//
// Lateness: the engine stamps a job's finished_at with the instant its plan says, not the
// instant it got round to it, so finished_at alone cannot show lateness. A wait=true answer
// leaves the emulator as soon as the job turns terminal, so the instant its headers arrive
// here, minus finished_at, is how late the transition was observed: timer lateness, the
// wake-up, writing the answer and reading it. Both instants come from the same machine's
// clock, which the emulator's real clock follows.
func sustain(ctx context.Context, args []string) error {
	fs := newFlags("sustain")
	seconds := fs.intIn("seconds", 10, 1, 600, "how long the load lasts")
	rate := fs.Float64("rate", 2000, "generations a second asked of all connections together; 0 for as fast as they go")
	conns := fs.intIn("conns", 8, 1, 256, "connections doing quote + generate")
	probes := fs.intIn("probes", 8, 0, 256, "extra connections generating with wait=true to measure lateness")
	model := fs.String("model", "fal-ai/flux/schnell", "the model to generate with")
	every := fs.Duration("every", time.Second, "how often to read resident memory and the account's charged credits")
	label := fs.String("label", "", "names the run in the table")
	bare := fs.Bool("bare", false, "the target is the bare baseline: print its flows/s only")
	vs := fs.Float64("vs", 0, "the baseline's flows/s measured in the same run, for a ratio")
	tg, err := fs.parse(args)
	if err != nil {
		return err
	}
	if *bare {
		*probes = 0
	}
	switch {
	case *rate < 0 || *rate > 1e6:
		return errors.New("-rate: want 0 to 1000000")
	case *every < 100*time.Millisecond:
		return errors.New("-every: want at least 100ms")
	}
	if *label == "" {
		*label = "unpaced"
		if *rate > 0 {
			*label = "at " + strconv.FormatFloat(*rate, 'f', -1, 64) + "/s"
		}
	}
	a := api{model: *model, input: lighthouse}
	headers := allKey
	admin, err := openAdmin(tg.addr, !*bare)
	if err != nil {
		return err
	}
	defer admin.close()
	perJob, charged0 := int64(1), int64(0)
	if !*bare {
		_, credits, err := a.quote(admin, headers)
		if err != nil {
			return err
		}
		if perJob = credits; perJob < 1 {
			return fmt.Errorf("%s quotes %d credits; completed jobs are counted by charged credits, so want at least 1", a.model, perJob)
		}
		if charged0, _, err = charged(admin); err != nil {
			return err
		}
	}

	type sample struct {
		at            time.Duration
		rss           int64
		charged, held int64
	}
	var (
		accepted, probed, failures, refusals atomic.Int64
		firstErr                             atomic.Value
		mu                                   sync.Mutex
		lateness, roundTrips                 []time.Duration
		wg                                   sync.WaitGroup
	)
	fail := func(err error) {
		if failures.Add(1) == 1 {
			firstErr.Store(err)
		}
	}
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	start := time.Now()
	deadline := start.Add(time.Duration(*seconds) * time.Second)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	cpu0 := cpuTicks(tg.pid)
	var self0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self0)

	// onConn runs loop on a connection of its own until the load ends.
	onConn := func(loop func(c *conn)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(tg.addr, 8192)
			if err != nil {
				fail(err)
				return
			}
			defer c.close()
			loop(c)
		}()
	}
	for w := range *conns {
		onConn(func(c *conn) {
			var trips []time.Duration
			defer func() { mu.Lock(); roundTrips = append(roundTrips, trips...); mu.Unlock() }()
			for k := 0; ctx.Err() == nil && failures.Load() < 1000; k++ {
				if *rate > 0 {
					planned := start.Add(time.Duration(float64(k**conns+w) / *rate * float64(time.Second)))
					if d := time.Until(planned); d > 0 {
						select {
						case <-time.After(d):
						case <-ctx.Done():
							return
						}
					}
				}
				t0 := time.Now()
				_, at, err := a.flow(c, headers, runID+"-w"+strconv.Itoa(w)+"-"+strconv.Itoa(k), false)
				if refused(err) {
					refusals.Add(1)
					continue
				}
				if err != nil {
					fail(err)
					continue
				}
				accepted.Add(1)
				if len(trips) < 200_000 {
					trips = append(trips, at.Sub(t0))
				}
			}
		})
	}
	for p := range *probes {
		onConn(func(c *conn) {
			for k := 0; ctx.Err() == nil && failures.Load() < 1000; k++ {
				body, at, err := a.flow(c, headers, runID+"-p"+strconv.Itoa(p)+"-"+strconv.Itoa(k), true)
				if err != nil {
					fail(err)
					continue
				}
				probed.Add(1)
				var j job
				if err := json.Unmarshal(body, &j); err != nil || j.Status != "succeeded" || j.FinishedAt == nil {
					fail(fmt.Errorf("wait=true answered %.200s", body))
					continue
				}
				fin, err := time.Parse(time.RFC3339Nano, *j.FinishedAt)
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				lateness = append(lateness, at.Sub(fin))
				mu.Unlock()
			}
		})
	}

	// The monitor reads memory and charged credits every -every until the load ends, then
	// until every accepted job has completed (at most 10 s more).
	var samples []sample
	read := func() {
		rss, _ := rssKB(tg.pid)
		var ch, held int64
		if !*bare {
			if ch, held, err = charged(admin); err != nil {
				fail(err)
			}
		}
		samples = append(samples, sample{time.Since(start), rss, (ch - charged0) / perJob, held / perJob})
	}
	tick := time.NewTicker(*every)
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			read()
		case <-ctx.Done():
		}
	}
	tick.Stop()
	wg.Wait()
	elapsed := time.Since(start)
	read()
	atDeadline := samples[len(samples)-1]
	loadSamples := samples
	cpu := float64(cpuTicks(tg.pid)-cpu0) / 100 / elapsed.Seconds()
	var self1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self1)
	selfCPU := (tv(self1.Utime) + tv(self1.Stime) - tv(self0.Utime) - tv(self0.Stime)).Seconds() / elapsed.Seconds()
	drainBy := time.Now().Add(10 * time.Second)
	for samples[len(samples)-1].held > 0 && time.Now().Before(drainBy) {
		time.Sleep(100 * time.Millisecond)
		read()
	}
	drained := samples[len(samples)-1]
	if n := failures.Load(); n > 0 {
		logf("%s: %d failed requests; the first: %v", *label, n, firstErr.Load())
	}

	// Completed jobs a second: over the steady part of the run, from the first sample a second
	// or more in (the first jobs finish about half a second in) to the end of the load.
	from := samples[0]
	for _, s := range loadSamples {
		if s.at >= time.Second {
			from = s
			break
		}
	}
	completedRate := 0.0
	if atDeadline.at > from.at {
		completedRate = float64(atDeadline.charged-from.charged) / (atDeadline.at - from.at).Seconds()
	}
	// Growth over the second half of the load: zero once memory has levelled off.
	growth := 0.0
	if mid, last := loadSamples[len(loadSamples)/2], loadSamples[len(loadSamples)-1]; last.at > mid.at {
		growth = float64(last.rss-mid.rss) / 1024 / (last.at - mid.at).Seconds()
	}
	var rssSeries []string
	for _, s := range loadSamples {
		rssSeries = append(rssSeries, strconv.FormatInt(s.rss/1024, 10))
	}
	if len(rssSeries) > 8 { // keep the table narrow: eight points, evenly spaced, the last kept
		picked := make([]string, 0, 8)
		for i := range 8 {
			picked = append(picked, rssSeries[i*(len(rssSeries)-1)/7])
		}
		rssSeries = picked
	}
	total := accepted.Load() + probed.Load()
	flowRate := float64(total) / elapsed.Seconds()
	if *bare {
		fmt.Printf("rate|%.0f\n", flowRate)
		return nil
	}
	asked := "as fast as it goes"
	if *rate > 0 {
		asked = "≥ " + strconv.FormatFloat(*rate, 'f', 0, 64)
	}
	measured, notes := fmt.Sprintf("%.0f", flowRate), fmt.Sprintf("%d conns + %d wait=true probes, %ds", *conns, *probes, *seconds)
	if *vs > 0 {
		measured = fmt.Sprintf("%.2f× (%.0f/s)", flowRate / *vs, flowRate)
		notes = fmt.Sprintf("bare handler, same bytes: %.0f quote + generate/s; %s", *vs, notes)
	}
	row("sustained "+*label+": accepted generations/s", measured, asked, notes)
	row("sustained "+*label+": refused (429)", strconv.FormatInt(refusals.Load(), 10), "0",
		fmt.Sprintf("of %d quote + generate flows", total+refusals.Load()))
	row("sustained "+*label+": completed jobs/s", fmt.Sprintf("%.0f", completedRate), "= accepted/s",
		fmt.Sprintf("%d of %d done %.1f s after the load", drained.charged, total, (drained.at-elapsed).Seconds()))
	rt := sorted(roundTrips)
	row("sustained "+*label+": quote + generate round trip p50 / p99", ms(percentile(rt, 50))+" / "+ms(percentile(rt, 99)), "—", "")
	if *probes > 0 {
		row("sustained "+*label+": finish observed late, p50 / p99 / max", spread(lateness), "small vs 500 ms job",
			fmt.Sprintf("%d wait=true samples", len(lateness)))
	}
	row("sustained "+*label+": emulator RSS over the run (MB)", strings.Join(rssSeries, " → ")+fmt.Sprintf("; %+.1f MB/s in the second half", growth), "plateaus",
		fmt.Sprintf("CPU: emulator %.2f, loadgen %.2f cores", cpu, selfCPU))
	return nil
}

// charged reads the default account's charged and held credits.
func charged(c *conn) (charged, held int64, err error) {
	body, err := control(c, "GET", "/_emulator/accounts", "")
	if err != nil {
		return 0, 0, err
	}
	var list struct {
		Data []struct {
			Account string `json:"account"`
			Held    int64  `json:"held"`
			Charged int64  `json:"charged"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return 0, 0, err
	}
	for _, a := range list.Data {
		if a.Account == "acct_all" {
			return a.Charged, a.Held, nil
		}
	}
	return 0, 0, errors.New("GET /_emulator/accounts: no acct_all")
}

// cpuTicks is a process's user and system CPU time in clock ticks (100 a second on Linux).
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s) // f[0] is the state, field 3 of the file; utime and stime are 14 and 15
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

func cmpErr(err error, what string, status int, body []byte) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return statusError(what, status, body)
}
