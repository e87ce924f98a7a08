package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// retained makes -jobs jobs through the API on an emulator with a manual clock, then times the
// single clock advance that finishes them all and reads the memory they hold once finished.
//
// The emulator must run with --clock manual and a scenario whose jobs run longer than the whole
// filling (loadbench's gives them 10 minutes) and whose quotes live 1 s: after each batch the
// clock steps past the quotes' lifetime while every job is still running, and the last advance
// is the one that finishes them. (Spent quotes no longer count toward the 10,000 live quotes an
// account may hold, so the steps are not needed; they keep the figures comparable.)
func retained(ctx context.Context, args []string) error {
	fs := newFlags("jobs")
	n := fs.intIn("jobs", 100_000, 1, 1_000_000, "how many jobs to make")
	conns := fs.intIn("conns", 8, 1, 256, "connections making them")
	batch := fs.intIn("batch", 9000, 1, 10_000, "jobs between clock steps; below the 10,000 quotes an account may hold")
	step := fs.String("step", "2s", "the clock step after each batch; longer than the quotes' lifetime")
	advance := fs.String("advance", "1h", "the advance that finishes every job")
	model := fs.String("model", "fal-ai/flux/schnell", "the model to generate with")
	tg, err := fs.parse(args)
	if err != nil {
		return err
	}
	a := api{model: *model, input: lighthouse}
	headers := allKey
	idle, err := rssKB(tg.pid)
	if err != nil {
		return err
	}
	admin, err := openAdmin(tg.addr, true)
	if err != nil {
		return err
	}
	defer admin.close()
	pool, err := dialPool(tg.addr, *conns)
	if err != nil {
		return err
	}
	defer closeAll(pool)

	start := time.Now()
	for made := 0; made < *n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		size := min(*batch, *n-made)
		err := fanOut(pool, made, made+size, func(c *conn, i int) error {
			_, _, err := a.flow(c, headers, "job-"+strconv.Itoa(i), false)
			return err
		})
		if err != nil {
			return err
		}
		made += size
		if _, err := control(admin, "POST", "/_emulator/clock", `{"advance":"`+*step+`"}`); err != nil {
			return err
		}
		logf("jobs: %d made", made)
	}
	fill := time.Since(start)
	if running, err := countJobs(admin, headers, "running"); err != nil {
		return err
	} else if running != *n {
		return fmt.Errorf("%d jobs running before the advance, want %d (a job ran out before it)", running, *n)
	}
	beforeRSS, _ := rssKB(tg.pid)

	t0 := time.Now()
	if _, err := control(admin, "POST", "/_emulator/clock", `{"advance":"`+*advance+`"}`); err != nil {
		return err
	}
	took := time.Since(t0)
	done, err := countJobs(admin, headers, "succeeded")
	if err != nil {
		return err
	}
	if done != *n {
		return fmt.Errorf("%d jobs succeeded after the advance, want %d", done, *n)
	}
	after, err := rssKB(tg.pid)
	if err != nil {
		return err
	}
	row(fmt.Sprintf("%d retained finished jobs: RSS", *n), fmt.Sprintf("%s (%.1f KB a job)", mb(after), float64(after-idle)/float64(*n)),
		"< 300 MB", "idle emulator "+mb(idle)+"; "+mb(beforeRSS)+" while running")
	row(fmt.Sprintf("one clock advance (%s) finishing %d jobs", *advance, *n), ms(took), "< 2 s", "")
	row(fmt.Sprintf("making them through the API (%d conns)", *conns), fmt.Sprintf("%.0f jobs/s", float64(*n)/fill.Seconds()), "—",
		"quote + generate each; manual clock")
	return nil
}

// countJobs reads how many of the account's jobs have a status.
func countJobs(c *conn, headers []string, status string) (int, error) {
	code, body, _, err := c.do("GET", "/v1/jobs?limit=1&status="+status, headers, nil)
	if err != nil {
		return 0, err
	}
	if code != 200 {
		return 0, statusError("GET /v1/jobs", code, body)
	}
	var page struct {
		Total int `json:"total"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return 0, err
	}
	return page.Total, nil
}

// waiters holds -n wait=true generations at once, one connection each, on an emulator with a
// manual clock, and reads the emulator's memory once all of them are blocked on their job. The
// connections are this process's, so its own memory stays out of the figure.
func waiters(ctx context.Context, args []string) error {
	fs := newFlags("waiters")
	n := fs.intIn("n", 10_000, 1, 20_000, "wait=true generations held at once (two accounts of 10,000 quotes)")
	conns := fs.intIn("conns", 8, 1, 256, "connections making the quotes first")
	model := fs.String("model", "fal-ai/flux/schnell", "the model to generate with")
	hold := fs.durationIn("hold", 0, 0, 2*time.Minute, "keep them waiting this long before the advance (to profile the emulator meanwhile)")
	tg, err := fs.parse(args)
	if err != nil {
		return err
	}
	a := api{model: *model, input: lighthouse}
	// Two accounts, since one holds at most 10,000 unexpired quotes.
	keys := [][]string{allKey, {"Authorization", "Bearer mg_test_generate"}}
	admin, err := dial(tg.addr, 8192)
	if err != nil {
		return err
	}
	defer admin.close()
	idle, err := rssKB(tg.pid)
	if err != nil {
		return err
	}

	quoteIDs := make([]string, *n)
	pool, err := dialPool(tg.addr, *conns)
	if err != nil {
		return err
	}
	err = fanOut(pool, 0, *n, func(c *conn, i int) (err error) {
		quoteIDs[i], _, err = a.quote(c, keys[i%2])
		return err
	})
	closeAll(pool)
	if err != nil {
		return err
	}
	withQuotes, _ := rssKB(tg.pid)

	// Open the connections from a few dialers at a time (the listen backlog is finite), each
	// sending its generation at once; one goroutine per connection then waits for its answer.
	held := make([]*conn, *n)
	answered := make(chan int, *n)
	var wg sync.WaitGroup
	var dialErr error
	var mu sync.Mutex
	next := 0
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := dialErr != nil || ctx.Err() != nil
				mu.Unlock()
				if i >= *n || stop {
					return
				}
				c, err := dial(tg.addr, 2048)
				if err == nil {
					gen := []string{keys[i%2][0], keys[i%2][1], "Idempotency-Key", "wait-" + strconv.Itoa(i)}
					err = c.send("POST", "/v1/generate?wait=true", gen, a.generateBody(quoteIDs[i]))
					if err == nil {
						err = c.nc.SetDeadline(time.Now().Add(2 * time.Minute))
					}
				}
				if err != nil {
					mu.Lock()
					dialErr = fmt.Errorf("connection %d: %w", i, err)
					mu.Unlock()
					return
				}
				held[i] = c
				go func() {
					status, _, _, err := c.receive()
					if err != nil {
						status = 0
					}
					answered <- status
				}()
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range held {
			if c != nil {
				c.close()
			}
		}
	}()
	if dialErr != nil {
		return dialErr
	}
	body, err := control(admin, "GET", "/_emulator/waiting?count="+strconv.Itoa(*n)+"&timeout=60s", "")
	if err != nil {
		return err
	}
	var w struct {
		Waiting int  `json:"waiting"`
		Reached bool `json:"reached"`
	}
	if err := json.Unmarshal(body, &w); err != nil || !w.Reached {
		return fmt.Errorf("only %d of %d generations were waiting after 60 s: %s", w.Waiting, *n, body)
	}
	waiting, err := rssKB(tg.pid)
	if err != nil {
		return err
	}

	if *hold > 0 {
		logf("waiters: %d waiting; holding them %s", *n, *hold)
		select {
		case <-time.After(*hold):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	t0 := time.Now()
	if _, err := control(admin, "POST", "/_emulator/clock", `{"advance":"1s"}`); err != nil {
		return err
	}
	ok := 0
	timeout := time.After(60 * time.Second)
	for range *n {
		select {
		case status := <-answered:
			if status == 200 {
				ok++
			}
		case <-timeout:
			return fmt.Errorf("only %d of %d waiting generations answered within 60 s of the advance", ok, *n)
		}
	}
	wake := time.Since(t0)
	if ok != *n {
		return fmt.Errorf("%d of %d waiting generations answered 200", ok, *n)
	}
	row(fmt.Sprintf("%d concurrent wait=true generations: RSS", *n), mb(waiting), "< 200 MB",
		fmt.Sprintf("idle %s, with the quotes %s: %.1f KB a waiter", mb(idle), mb(withQuotes), float64(waiting-withQuotes)/float64(*n)))
	row(fmt.Sprintf("advance 1s: all %d waiters answered", *n), ms(wake), "—", "200 each, with the finished job")
	return nil
}
