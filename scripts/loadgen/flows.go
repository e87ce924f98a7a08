package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// flows makes -n quote + generate flows on one key from -conns connections, as a user's suite
// would, on an emulator with a manual clock and default flags: the clock steps -step after each
// -batch flows, so jobs finish while quotes (10 minutes by default) stay far from expiring, and
// every quote a flow spends must stop counting toward the account's quote bound. Answers 429
// are counted and the flows go on. Resident memory is read every tenth of the run.
//
// With -bare the target is loadbench-baseline answering the emulator's bytes: no clock steps;
// it prints "rate|FLOWS/S" for loadbench to pass back as -vs.
func flows(ctx context.Context, args []string) error {
	fs := newFlags("flows")
	n := fs.intIn("n", 100_000, 1, 1_000_000, "flows to make")
	conns := fs.intIn("conns", 8, 1, 256, "connections making them")
	batch := fs.intIn("batch", 1000, 1, 100_000, "flows between clock steps")
	step := fs.String("step", "1s", "the clock step after each batch")
	model := fs.String("model", "fal-ai/flux/schnell", "the model to generate with")
	bare := fs.Bool("bare", false, "the target is the bare baseline: print its flows/s only")
	vs := fs.Float64("vs", 0, "the baseline's flows/s measured in the same run, for a ratio")
	tg, err := fs.parse(args)
	if err != nil {
		return err
	}
	a := api{model: *model, input: lighthouse}
	admin, err := openAdmin(tg.addr, !*bare)
	if err != nil {
		return err
	}
	defer admin.close()
	pool, err := dialPool(tg.addr, *conns)
	if err != nil {
		return err
	}
	defer closeAll(pool)
	idle, err := rssKB(tg.pid)
	if err != nil {
		return err
	}
	var refusals atomic.Int64
	every := max(*batch, *n/10)
	var rss []int64
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	start := time.Now()
	for made := 0; made < *n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		size := min(*batch, *n-made)
		err := fanOut(pool, made, made+size, func(c *conn, i int) error {
			_, _, err := a.flow(c, allKey, runID+"-"+strconv.Itoa(i), false)
			if refused(err) {
				refusals.Add(1)
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
		made += size
		if !*bare {
			if _, err := control(admin, "POST", "/_emulator/clock", `{"advance":"`+*step+`"}`); err != nil {
				return err
			}
		}
		if made%every == 0 || made == *n {
			kb, _ := rssKB(tg.pid)
			rss = append(rss, kb)
		}
	}
	took := time.Since(start)
	rate := float64(*n) / took.Seconds()
	if *bare {
		fmt.Printf("rate|%.0f\n", rate)
		return nil
	}
	label := fmt.Sprintf("one key, manual clock, default flags: %d flows", *n)
	measured, notes := fmt.Sprintf("%.0f/s", rate), fmt.Sprintf("%d conns; the clock steps %s every %d flows", *conns, *step, *batch)
	if *vs > 0 {
		measured = fmt.Sprintf("%.2f× (%.0f/s)", rate / *vs, rate)
		notes = fmt.Sprintf("bare handler, same bytes: %.0f/s; %s", *vs, notes)
	}
	row(label+": quote + generate flows/s", measured, "—", notes)
	row(label+": refused (429)", strconv.FormatInt(refusals.Load(), 10), "0", fmt.Sprintf("of %d flows", *n))
	series := make([]string, len(rss))
	for i, kb := range rss {
		series[i] = strconv.FormatInt(kb/1024, 10)
	}
	growth := 0.0
	if len(rss) >= 2 {
		mid := len(rss) / 2
		growth = float64(rss[len(rss)-1]-rss[mid]) / 1024 / float64(len(rss)-1-mid)
	}
	row(label+": emulator RSS every "+strconv.Itoa(every)+" flows (MB)", strings.Join(series, " → ")+
		fmt.Sprintf("; %+.1f MB per step in the second half", growth), "levels off", "idle "+mb(idle))
	return nil
}
