package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// quoteOnly quotes unpaced on one key from -conns connections for -for on the real clock, as a
// backend that prices what a user types would, spending none of them: every quote stays live
// for its whole lifetime (10 minutes by default), so the account's bound on live quotes meets
// all of them. Refusals (429) are counted and the quoting goes on; resident memory is read
// every tenth of the run.
func quoteOnly(ctx context.Context, args []string) error {
	fs := newFlags("quotes")
	conns := fs.intIn("conns", 8, 1, 256, "connections quoting")
	span := fs.durationIn("for", time.Minute, time.Second, 10*time.Minute, "how long to quote")
	model := fs.String("model", "fal-ai/flux/schnell", "the model to quote")
	tg, err := fs.parse(args)
	if err != nil {
		return err
	}
	a := api{model: *model, input: lighthouse}
	pool, err := dialPool(tg.addr, *conns)
	if err != nil {
		return err
	}
	defer closeAll(pool)
	idle, err := rssKB(tg.pid)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *span)
	defer cancel()
	var made, refusals atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(pool))
	for _, c := range pool {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _, err := a.quote(c, allKey)
				switch {
				case refused(err):
					refusals.Add(1)
				case err != nil:
					errs <- err
					cancel()
					return
				default:
					made.Add(1)
				}
			}
		}()
	}
	var peak int64
	tick := time.NewTicker(*span / 10)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			waiting = false
		case <-tick.C:
			if kb, err := rssKB(tg.pid); err == nil {
				peak = max(peak, kb)
			}
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	end, _ := rssKB(tg.pid)
	peak = max(peak, end)
	n := made.Load()
	label := fmt.Sprintf("one key, real clock, quotes only, %d conns for %v", *conns, *span)
	row(label+": quotes made", fmt.Sprintf("%d (%.0f/s)", n, float64(n)/span.Seconds()), "—", "all live at the end")
	row(label+": refused (429)", strconv.FormatInt(refusals.Load(), 10), "0", "")
	perQuote := "—"
	if n > 0 {
		perQuote = fmt.Sprintf("%.0f bytes", float64(end-idle)*1024/float64(n))
	}
	row(label+": emulator RSS", fmt.Sprintf("peak %s, end %s; %s per live quote", mb(peak), mb(end), perQuote), "within the budget", "idle "+mb(idle))
	return nil
}
