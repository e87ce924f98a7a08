package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// budget fills -tenants tenants, from -conns connections, with -jobs jobs whose inputs are
// about 1 MiB each (fewer when the memory budget refuses), then 20,000 quotes (fewer likewise), reading resident memory every half second: the
// process should stay within --memory-budget plus the fixed overhead it documents.
func budget(ctx context.Context, args []string) error {
	fs := newFlags("budget")
	tenants := fs.intIn("tenants", 40, 1, 1000, "tenants to fill")
	conns := fs.intIn("conns", 8, 1, 64, "connections filling them")
	limit := fs.String("budget", "1GiB", "the emulator's --memory-budget, as it was given (for the table)")
	span := fs.durationIn("for", 5*time.Minute, time.Second, 20*time.Minute, "the longest the run may take")
	perTenant := fs.intIn("jobs", 60, 1, 1000, "jobs of 1 MB inputs made in each tenant")
	model := fs.String("model", "fal-ai/flux/dev/image-to-image", "a model whose input has image_url and prompt")
	tg, err := fs.parse(args)
	if err != nil {
		return err
	}
	idle, err := rssKB(tg.pid)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *span)
	defer cancel()
	var peak atomic.Int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			if kb, err := rssKB(tg.pid); err == nil && kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	url := "https://example.com/" + strings.Repeat("a", 1_000_000)
	full := func(err error) bool {
		var he *httpError
		return errors.As(err, &he) && (he.status == http.StatusTooManyRequests || he.status == http.StatusServiceUnavailable)
	}
	var jobs, quotes, refusals atomic.Int64
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, *conns)
	// fill makes up to n of something with one, counting them in made, until the budget
	// refuses one (counted too); false when one failed otherwise, which ends the run.
	fill := func(n int, made *atomic.Int64, one func(i int) error) bool {
		for i := 0; ctx.Err() == nil && i < n; i++ {
			err := one(i)
			if full(err) {
				refusals.Add(1)
				return true
			}
			if err != nil {
				errs <- err
				cancel()
				return false
			}
			made.Add(1)
		}
		return true
	}
	for range *conns {
		c, err := dial(tg.addr, 8192)
		if err != nil {
			return err
		}
		defer c.close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				headers := []string{"Authorization", "Bearer mg_test_all.fill" + strconv.Itoa(t)}
				// Jobs until the tenant's inputs fill its bound (64 MiB) or the budget refuses, then
				// quotes until it does.
				ok := fill(*perTenant, &jobs, func(i int) error {
					a := api{model: *model, input: `{"prompt":"job ` + strconv.Itoa(i) + `","image_url":"` + url + `"}`}
					_, _, err := a.flow(c, headers, "fill-"+strconv.Itoa(i), false)
					return err
				}) && fill(20_000, &quotes, func(i int) error {
					a := api{model: *model, input: `{"prompt":"quote ` + strconv.Itoa(i) + `","image_url":"https://example.com/x"}`}
					_, _, err := a.quote(c, headers)
					return err
				})
				if !ok {
					return
				}
			}
		}()
	}
	for t := range *tenants {
		select {
		case work <- t:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	cancel()
	<-sampled
	select {
	case err := <-errs:
		return err
	default:
	}
	end, _ := rssKB(tg.pid)
	label := fmt.Sprintf("--memory-budget %s, %d tenants filled with 1 MB-input jobs, then quotes", *limit, *tenants)
	row(label+": emulator RSS", fmt.Sprintf("peak %s, end %s", mb(max(peak.Load(), end)), mb(end)), "the budget + 512 MiB",
		fmt.Sprintf("idle %s; %d jobs, %d quotes, %d refusals", mb(idle), jobs.Load(), quotes.Load(), refusals.Load()))
	return nil
}
