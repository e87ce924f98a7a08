package main

import (
	"context"
	"errors"
	"flag"
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
	fs := flag.NewFlagSet("budget", flag.ContinueOnError)
	rawURL, pid := targetFlags(fs)
	tenants := fs.Int("tenants", 40, "tenants to fill, 1 to 1000")
	conns := fs.Int("conns", 8, "connections filling them, 1 to 64")
	limit := fs.String("budget", "1GiB", "the emulator's --memory-budget, as it was given (for the table)")
	span := fs.Duration("for", 5*time.Minute, "the longest the run may take, 1s to 20m")
	perTenant := fs.Int("jobs", 60, "jobs of 1 MB inputs made in each tenant, 1 to 1000")
	model := fs.String("model", "fal-ai/flux/dev/image-to-image", "a model whose input has image_url and prompt")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tg, err := parseTarget(*rawURL, *pid)
	if err != nil {
		return err
	}
	if *tenants < 1 || *tenants > 1000 || *conns < 1 || *conns > 64 || *span < time.Second || *span > 20*time.Minute || *perTenant < 1 || *perTenant > 1000 {
		return errors.New("-tenants, -conns, -jobs or -for out of range")
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
				for i := 0; ctx.Err() == nil && i < *perTenant; i++ {
					a := api{model: *model, input: `{"prompt":"job ` + strconv.Itoa(i) + `","image_url":"` + url + `"}`}
					_, _, err := a.flow(c, headers, "fill-"+strconv.Itoa(i), false)
					if full(err) {
						refusals.Add(1)
						break
					}
					if err != nil {
						errs <- err
						cancel()
						return
					}
					jobs.Add(1)
				}
				for i := 0; ctx.Err() == nil && i < 20_000; i++ {
					a := api{model: *model, input: `{"prompt":"quote ` + strconv.Itoa(i) + `","image_url":"https://example.com/x"}`}
					_, _, err := a.quote(c, headers)
					if full(err) {
						refusals.Add(1)
						break
					}
					if err != nil {
						errs <- err
						cancel()
						return
					}
					quotes.Add(1)
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
