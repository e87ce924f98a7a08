// Command mediagen-emulator serves an emulated Media Generation Service for client tests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/cli"
	"github.com/mediagen/mediagen-emulator/internal/atomicfile"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitError carries the exit status a failure should end the process with.
type exitError struct {
	code int
	msg  string
}

// Error is the message printed before exiting.
func (e *exitError) Error() string { return e.msg }

// exited is the error a subcommand's exit status ends the process with, nil for 0; the
// subcommand has said what went wrong.
func exited(code int) error {
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}

func usageError(format string, args ...any) error {
	return &exitError{code: 2, msg: fmt.Sprintf(format, args...)}
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "mediagen-emulator:", err)
	return 1
}

// options are the command line's settings after flags and environment: the emulator's settings
// and Serve's limits that a flag sets as they are, and the text of those that configure reads.
type options struct {
	cfg    emulator.Config
	limits emulator.ServeLimits
	addr   string
	// seed, clock, budget (--memory-budget, a size such as 2GiB), cors, webhookEvents and
	// webhookAllow are read into cfg by configure.
	seed, clock, budget, cors, webhookEvents, webhookAllow string
	logFormat                                              string
	// inputsAllow is --inputs-allow, read into cfg by configure.
	inputsAllow string
	// state is a snapshot file the default tenant starts from; stateOnExit where its snapshot
	// is written at a clean shutdown.
	state       string
	stateOnExit string
	// retentionGiven is set when --job-retention (or its variable) was given, not defaulted.
	retentionGiven bool
}

const usageText = `Usage:
  mediagen-emulator [flags]              serve the emulated API
  mediagen-emulator validate FILE...     check catalog and scenario files; print FILE:LINE: problems
  mediagen-emulator healthcheck [flags]  exit 0 when the emulator at --addr is healthy
  mediagen-emulator import --from URL    write a catalog file read from a live service (import -h)
  mediagen-emulator drift --from URL --catalog FILE   report how a catalog differs from a live service
  mediagen-emulator parity --from URL    compare the live service's error answers with the emulator's, without spending (parity -h)
  mediagen-emulator explore -- CMD...    run a client under drawn adversity plans, shrink a failure, write a bundle (explore -h)
  mediagen-emulator conformance --adapter CMD   score a client on the conformance battery through its adapter (conformance -h)
  mediagen-emulator version              print the version

Every flag can also be set with MEDIAGEN_<FLAG> (e.g. MEDIAGEN_ADDR); flags win.

Flags:
`

// flagSet declares the flags, each defaulting to its MEDIAGEN_* variable when that is set.
func flagSet(name string, getenv func(string) string, stderr io.Writer) (*flag.FlagSet, *options, map[string]error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	o := &options{}
	envErrs := map[string]error{} // by flag; reported only when the flag itself is not given
	env := func(flagName, def string) string {
		if v := getenv("MEDIAGEN_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))); v != "" {
			return v
		}
		return def
	}
	dur := func(p *time.Duration, flagName string, def time.Duration, usage string) {
		*p = def
		if v := env(flagName, ""); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				envErrs[flagName] = fmt.Errorf("MEDIAGEN_%s=%q: want a positive duration such as 90s", strings.ToUpper(strings.ReplaceAll(flagName, "-", "_")), v)
			} else {
				*p = d
			}
		}
		fs.DurationVar(p, flagName, *p, usage)
	}
	count := func(p *int, flagName string, def int, usage string) {
		*p = def
		if v := env(flagName, ""); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				envErrs[flagName] = fmt.Errorf("MEDIAGEN_%s=%q: want a positive integer", strings.ToUpper(strings.ReplaceAll(flagName, "-", "_")), v)
			} else {
				*p = n
			}
		}
		fs.IntVar(p, flagName, *p, usage)
	}
	d, limits := emulator.Config{}.WithDefaults(), emulator.ServeLimits{}.WithDefaults()
	fs.StringVar(&o.addr, "addr", env("addr", "127.0.0.1:8080"), "listen address HOST:PORT (port 0 picks a free port)")
	fs.StringVar(&o.cfg.CatalogFile, "catalog", env("catalog", ""), "catalog YAML file (default: the embedded catalog)")
	fs.StringVar(&o.cfg.Scenario, "scenario", env("scenario", d.Scenario), "scenario: an embedded name (default, realistic, flaky, slow, expiring, outage, rate-limited) or a YAML path")
	fs.StringVar(&o.seed, "seed", env("seed", ""), "integer seed that makes ids, random draws and media reproducible")
	fs.StringVar(&o.clock, "clock", env("clock", "real"), "real; manual: time moves only through POST /_emulator/clock; skip: still, but a request waiting on a job moves it to the job's next transition")
	dur(&o.cfg.MaxWait, "max-wait", d.MaxWait, "longest a wait=true generation waits")
	dur(&o.cfg.QuoteTTL, "quote-ttl", d.QuoteTTL, "how long a quote stays valid")
	dur(&o.cfg.OutputTTL, "output-ttl", d.OutputTTL, "how long output files stay downloadable (then 410)")
	dur(&o.cfg.JobRetention, "job-retention", d.JobRetention, "how long finished jobs are kept; never less than --output-ttl, which raises the default when longer")
	dur(&o.limits.BodyTimeout, "body-timeout", limits.BodyTimeout, "longest a request's body may take to arrive (a wait=true generation may still wait --max-wait after it)")
	dur(&o.limits.IdleTimeout, "idle-timeout", limits.IdleTimeout, "how long an idle keep-alive connection stays open")
	o.retentionGiven = env("job-retention", "") != ""
	fs.StringVar(&o.cfg.AdminToken, "admin-token", env("admin-token", ""), "token the control API requires as X-Emulator-Admin-Token")
	fs.StringVar(&o.logFormat, "log-format", env("log-format", "text"), "text or json (logs go to standard error)")
	dur(&o.cfg.TenantIdle, "tenant-idle", d.TenantIdle, "how long a tenant lives without requests (real time)")
	count(&o.cfg.MaxTenants, "max-tenants", d.MaxTenants, "most tenants alive at once besides the default one (then 429 too_many_tenants)")
	count(&o.cfg.MaxJobs, "max-jobs", d.MaxJobs, "most jobs each tenant retains; the oldest finished are dropped first")
	fs.StringVar(&o.budget, "memory-budget", env("memory-budget", formatSize(d.MemoryBudget)), "bytes all tenants' quotes, jobs, keys and journals may hold together, such as 512MiB (then 503 memory_budget_exhausted)")
	fs.StringVar(&o.state, "state", env("state", ""), "snapshot FILE the default tenant starts from (GET /_emulator/snapshot writes one)")
	fs.StringVar(&o.stateOnExit, "state-on-exit", env("state-on-exit", ""), "FILE the default tenant's snapshot, journal included, is written to at a clean shutdown (SIGTERM or SIGINT)")
	fs.StringVar(&o.cors, "cors-origins", env("cors-origins", strings.Join(d.CORSOrigins, ",")), "origins browsers may call /v1 and /files from: *, none, or a comma-separated list such as http://localhost:5173")
	fs.StringVar(&o.cfg.WebhookURL, "webhook", env("webhook", ""), "URL every tenant's job events are POSTed to, signed with --webhook-secret (until a scenario or PUT /_emulator/webhooks sets another)")
	fs.StringVar(&o.cfg.WebhookSecret, "webhook-secret", env("webhook-secret", ""), "whsec_<base64> secret the run's and the scenarios' webhooks are signed with")
	fs.StringVar(&o.webhookEvents, "webhook-events", env("webhook-events", ""), "comma-separated events --webhook sends (default job.succeeded,job.failed,job.canceled,job.expired)")
	fs.StringVar(&o.webhookAllow, "webhook-allow", env("webhook-allow", ""), "HOST[:PORT],... beyond loopback that webhooks may reach, such as host.docker.internal (the address a name resolves to is checked)")
	fs.StringVar(&o.cfg.Inputs, "inputs", env("inputs", ""), "fetch: media inputs are judged by a hosted service's rules and read (uploads, data: URIs, --inputs-allow hosts), POST /v1/uploads answers, and outputs follow their inputs (default off: input URLs are validated, never fetched)")
	fs.StringVar(&o.inputsAllow, "inputs-allow", env("inputs-allow", ""), "HOST[:PORT],... inputs are really fetched from, such as a test's own file server 127.0.0.1:8000; other URLs that pass the rules stand in as a seeded input")
	return fs, o, envErrs
}

// run is the whole program: it returns when ctx is canceled (after a graceful shutdown) or on
// failure. The first line on stdout, once listening, is "listening on http://HOST:PORT".
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			fmt.Fprintln(stdout, "mediagen-emulator", emulator.Version)
			return nil
		case "validate":
			return exited(cli.Validate(args[1:], stdout, stderr))
		case "healthcheck":
			return healthcheck(ctx, args[1:], getenv, stderr)
		case "import", "drift":
			return exited(cli.Import(ctx, args[0], args[1:], getenv, stdout, stderr))
		case "parity":
			return exited(cli.Parity(ctx, args[1:], getenv, stdout, stderr))
		case "explore":
			return exited(cli.Explore(ctx, args[1:], getenv, stdout, stderr))
		case "conformance":
			return exited(cli.Conformance(ctx, args[1:], getenv, stdout, stderr))
		case "serve":
			args = args[1:]
		}
	}
	fs, o, envErrs := flagSet("mediagen-emulator", getenv, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError("")
	}
	if fs.NArg() > 0 {
		return usageError("mediagen-emulator: unexpected argument %q (commands: validate, import, drift, parity, explore, conformance, healthcheck, version)", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		delete(envErrs, f.Name)
		if f.Name == "job-retention" {
			o.retentionGiven = true
		}
	})
	if len(envErrs) > 0 {
		var errs []error
		for _, name := range slices.Sorted(maps.Keys(envErrs)) {
			errs = append(errs, envErrs[name])
		}
		return usageError("mediagen-emulator: %v", errors.Join(errs...))
	}
	cfg, err := configure(o)
	if err != nil {
		return err
	}
	if o.stateOnExit != "" {
		// Checked now, not at the shutdown that needs it: a run's state is lost if its file
		// turns out unwritable only once the run is over.
		if err := checkStateTarget(o.stateOnExit); err != nil {
			return usageError("mediagen-emulator: --state-on-exit %s: %v", o.stateOnExit, err)
		}
	}
	// The budget is a promise about the process: the heap is held to the budget and the fixed
	// overhead, unless GOMEMLIMIT says otherwise.
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(cfg.MemoryBudget + emulator.MemoryOverhead)
	}
	logger, closeLog := emulator.NewLogger(stderr, o.logFormat == "json")
	defer closeLog()
	cfg.Logger = logger
	srv, err := emulator.NewServer(cfg)
	if err != nil {
		return usageError("mediagen-emulator: cannot start:\n%v", err)
	}
	defer srv.Close()
	if o.state != "" {
		data, err := readState(o.state, cfg.WithDefaults().MaxSnapshotBytes)
		if err != nil {
			return usageError("mediagen-emulator: --state %s: %v", o.state, err)
		}
		if err := srv.Restore("", data); err != nil {
			return usageError("mediagen-emulator: --state %s: %v", o.state, err)
		}
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return usageError("mediagen-emulator: cannot listen on %s: %v", o.addr, errors.Unwrap(err))
	}
	if cfg.ControlDisabled {
		logger.Warn("control API disabled: listening on a non-loopback address without --admin-token; set one to enable /_emulator/ (health stays open)", slog.String("addr", ln.Addr().String()))
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", listenURLHost(o.addr, ln.Addr()))
	if err := srv.Serve(ctx, ln, o.limits); err != nil {
		return err
	}
	if o.stateOnExit != "" {
		return writeState(srv, o.stateOnExit)
	}
	return nil
}

// readState reads a --state file of at most limit bytes. Only a regular file is read: a FIFO
// would block the start until a writer came, and a device such as /dev/zero never ends.
func readState(path string, limit int64) ([]byte, error) {
	if err := regularOrAbsent(path, os.Stat, false); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	defer f.Close()
	// The file is looked at once more through the handle, in case it changed after Stat.
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	// A file its size already puts over the limit is not read: the limit is the memory budget,
	// too much to read only to refuse. One that grows while it is read is still cut off.
	if fi.Size() > limit {
		return nil, fmt.Errorf("over the limit of %d bytes for a snapshot", limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("over the limit of %d bytes for a snapshot", limit)
	}
	return data, nil
}

// regularOrAbsent says why path cannot be taken as a state file: it is something other than a
// regular file (stat decides whether a symlink is followed), or, unless absentOK, it is missing.
func regularOrAbsent(path string, stat func(string) (os.FileInfo, error), absentOK bool) error {
	fi, err := stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && absentOK:
		return nil
	case err != nil:
		return errors.Unwrap(err)
	case fi.IsDir():
		return errors.New("a folder, not a file")
	case fi.Mode()&os.ModeSymlink != 0:
		return errors.New("a symbolic link; name the file it points to")
	case !fi.Mode().IsRegular():
		return fmt.Errorf("not a regular file (%s), which a snapshot never replaces", fi.Mode().Type())
	}
	return nil
}

// checkStateTarget says why the state could not be written to path at exit: its folder is
// missing or not writable, or path is something other than a regular file or nothing.
func checkStateTarget(path string) error {
	if err := regularOrAbsent(path, os.Lstat, true); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("its folder %s does not exist", dir)
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return fmt.Errorf("its folder %s is not writable: %v", dir, errors.Unwrap(err))
	}
	return f.Discard()
}

// writeState writes the default tenant's snapshot to a file, whole or not at all. A path that
// has become something other than a regular file since the start is left alone.
func writeState(srv *emulator.Server, path string) error {
	fail := func(err error) error { return fmt.Errorf("mediagen-emulator: --state-on-exit %s: %w", path, err) }
	data, err := srv.Snapshot("", true)
	if err != nil {
		return fail(err)
	}
	if err := regularOrAbsent(path, os.Lstat, true); err != nil {
		return fail(err)
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o644); err != nil {
		return fail(err)
	}
	return nil
}

// configure checks the options and reads the rest of them into the emulator's Config; the
// logger is left to the caller.
func configure(o *options) (emulator.Config, error) {
	cfg := o.cfg
	if o.logFormat != "text" && o.logFormat != "json" {
		return cfg, usageError("mediagen-emulator: --log-format %q: want text or json", o.logFormat)
	}
	switch o.clock {
	case "real":
	case "manual":
		cfg.ManualClock = true
	case "skip":
		cfg.SkipClock = true
	default:
		return cfg, usageError("mediagen-emulator: --clock %q: want real, manual or skip", o.clock)
	}
	if o.seed != "" {
		n, err := strconv.ParseInt(o.seed, 10, 64)
		if err != nil {
			return cfg, usageError("mediagen-emulator: --seed %q: want an integer", o.seed)
		}
		cfg.Seeded, cfg.Seed = true, n
	}
	if cfg.MaxWait <= 0 || cfg.QuoteTTL <= 0 || cfg.OutputTTL <= 0 || cfg.JobRetention <= 0 || o.limits.BodyTimeout <= 0 || o.limits.IdleTimeout <= 0 || cfg.TenantIdle <= 0 {
		return cfg, usageError("mediagen-emulator: --max-wait, --quote-ttl, --output-ttl, --job-retention, --body-timeout, --idle-timeout and --tenant-idle must be positive")
	}
	if cfg.MaxTenants < 1 || cfg.MaxJobs < 1 {
		return cfg, usageError("mediagen-emulator: --max-tenants and --max-jobs must be at least 1")
	}
	if o.retentionGiven && cfg.JobRetention < cfg.OutputTTL {
		// Given, not defaulted: Config.WithDefaults raises a default below --output-ttl.
		return cfg, usageError("mediagen-emulator: --job-retention %v is shorter than --output-ttl %v: a job must be kept at least as long as its outputs; raise --job-retention or lower --output-ttl", cfg.JobRetention, cfg.OutputTTL)
	}
	if cfg.AdminToken != strings.TrimSpace(cfg.AdminToken) {
		return cfg, usageError("mediagen-emulator: --admin-token begins or ends with white space, which no request can send (header values are trimmed); remove it")
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return cfg, usageError("mediagen-emulator: --addr %q: want HOST:PORT", o.addr)
	}
	cfg.ControlDisabled = cfg.AdminToken == "" && !isLoopback(host)
	if cfg.ManualClock && cfg.ControlDisabled {
		return cfg, usageError("mediagen-emulator: --clock manual moves time only through the control API, which is disabled on %s without --admin-token; set --admin-token (or listen on a loopback address)", o.addr)
	}
	if cfg.CORSOrigins, err = corsOrigins(o.cors); err != nil {
		return cfg, usageError("mediagen-emulator: --cors-origins %q: %v", o.cors, err)
	}
	if cfg.MemoryBudget, err = parseSize(o.budget); err != nil {
		return cfg, usageError("mediagen-emulator: --memory-budget %v", err)
	}
	cfg.WebhookEvents, cfg.WebhookAllow = commaList(o.webhookEvents), commaList(o.webhookAllow)
	if cfg.Inputs != "" && cfg.Inputs != "fetch" && cfg.Inputs != "off" {
		return cfg, usageError("mediagen-emulator: --inputs %q must be fetch or off", cfg.Inputs)
	}
	cfg.InputsAllow = commaList(o.inputsAllow)
	return cfg, nil
}

// commaList splits a comma-separated flag, dropping empty items.
func commaList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// corsOrigins reads --cors-origins: "*" (any origin), "none", or a comma-separated list of
// origins, each SCHEME://HOST[:PORT] as a browser sends it in Origin.
func corsOrigins(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	if v == "*" || v == "none" {
		return []string{v}, nil
	}
	var out []string
	for _, o := range strings.Split(v, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if o == "*" || o == "none" {
			return nil, fmt.Errorf("%s stands alone, not in a list", o)
		}
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not an origin; want SCHEME://HOST[:PORT] such as http://localhost:5173", o)
		}
		out = append(out, strings.TrimSuffix(o, "/"))
	}
	if len(out) == 0 {
		return nil, errors.New("want *, none, or a comma-separated list of origins")
	}
	return out, nil
}

// listenURLHost is the HOST:PORT of the listening line: the port bound, and the host asked for
// when the listener reports a wildcard, so 0.0.0.0:0 prints 0.0.0.0:PORT rather than [::]:PORT.
func listenURLHost(asked string, bound net.Addr) string {
	tcp, ok := bound.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return bound.String()
	}
	host, _, _ := net.SplitHostPort(asked)
	if host == "" {
		host = "0.0.0.0"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// isLoopback reports whether a listen host is reachable only from this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func healthcheck(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs, o, _ := flagSet("mediagen-emulator healthcheck", getenv, stderr)
	if err := fs.Parse(args); err != nil {
		return usageError("")
	}
	host, port, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usageError("healthcheck: --addr %q: want HOST:PORT", o.addr)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/_emulator/health", nil)
	if err != nil {
		return &exitError{code: 1, msg: "healthcheck: " + err.Error()}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &exitError{code: 1, msg: "healthcheck: unhealthy: " + err.Error()}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return &exitError{code: 1, msg: fmt.Sprintf("healthcheck: unhealthy: status %d", resp.StatusCode)}
	}
	return nil
}

// sizeUnits are the units of a size on the command line, largest first.
var sizeUnits = [...]struct {
	suffix string
	size   int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// formatSize writes a size as parseSize reads it, in the largest unit that divides it (1GiB).
func formatSize(n int64) string {
	for _, u := range sizeUnits {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// parseSize reads a size as the command line gives it: a whole number of bytes, or one followed by
// KiB, MiB, GiB or TiB (2GiB, 512MiB). The smallest budget taken is 1 MiB.
func parseSize(s string) (int64, error) {
	text := strings.TrimSpace(s)
	unit := int64(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(text, u.suffix); ok {
			text, unit = strings.TrimSpace(rest), u.size
			break
		}
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("%q: want a size such as 2GiB, 512MiB or a number of bytes", s)
	}
	if n*unit < 1<<20 {
		return 0, fmt.Errorf("%q: want at least 1MiB", s)
	}
	return n * unit, nil
}
