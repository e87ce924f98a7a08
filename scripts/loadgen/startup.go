package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// startup times, for the emulator and for the bare baseline in turn, the start from exec to the
// "listening on" line and to the first 200 answer to GET /v1/models, and prints the medians.
// The emulator serves its embedded catalog; the first answer proves the catalog is loaded.
func startup(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("startup", flag.ContinueOnError)
	emulator := fs.String("emulator", "", "the emulator's binary")
	baseline := fs.String("baseline", "", "the baseline's binary")
	starts := fs.Int("n", 7, "starts of each, 1 to 50")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *emulator == "" || *baseline == "" || *starts < 1 || *starts > 50 {
		return errors.New("want -emulator BIN -baseline BIN and -n from 1 to 50")
	}
	var listen, ready [2][]time.Duration
	for range *starts {
		for i, argv := range [][]string{{*baseline, "-addr", "127.0.0.1:0"}, {*emulator, "--addr", "127.0.0.1:0"}} {
			if err := ctx.Err(); err != nil {
				return err
			}
			l, r, err := startOnce(argv)
			if err != nil {
				return fmt.Errorf("%s: %w", argv[0], err)
			}
			listen[i] = append(listen[i], l)
			ready[i] = append(ready[i], r)
		}
	}
	med := func(d []time.Duration) time.Duration { return percentile(sorted(d), 50) }
	row(fmt.Sprintf("start-up: exec → first 200 GET /v1/models (median of %d)", *starts), ms(med(ready[1])), "≤ 20 ms",
		fmt.Sprintf("bare handler %s (%.1f×)", ms(med(ready[0])), float64(med(ready[1]))/float64(med(ready[0]))))
	row("start-up: exec → listening line", ms(med(listen[1])), "—", "bare handler "+ms(med(listen[0])))
	return nil
}

// startOnce runs a server, waits for its listening line and then for a 200 from GET /v1/models
// (asked again at once after anything else), and stops it.
func startOnce(argv []string) (listen, ready time.Duration, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = nil // /dev/null
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			lines <- s.Text()
		}
		close(lines)
		for s.Scan() { // keep the pipe drained
		}
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(15 * time.Second):
		return 0, 0, errors.New("no listening line within 15 s")
	}
	listen = time.Since(t0)
	addr, ok := strings.CutPrefix(line, "listening on http://")
	if !ok || !strings.HasPrefix(addr, "127.0.0.1:") {
		return 0, 0, fmt.Errorf("unexpected first line %q", line)
	}
	c, err := dial(addr, 64<<10)
	if err != nil {
		return 0, 0, err
	}
	defer c.close()
	headers := []string{"Authorization", "Bearer mg_test_all"}
	for deadline := t0.Add(15 * time.Second); time.Now().Before(deadline); {
		status, _, at, err := c.do("GET", "/v1/models", headers, nil)
		if err == nil && status == 200 {
			return listen, at.Sub(t0), nil
		}
		time.Sleep(100 * time.Microsecond)
	}
	return 0, 0, fmt.Errorf("no 200 from GET /v1/models within 15 s")
}
