package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// updateScreenshots rewrites docs/screenshots/*.png from the browser test.
var updateScreenshots = flag.Bool("screenshots", false, "write the dashboard's screenshots to docs/screenshots")

// browserPath finds Chromium; the browser test is skipped without it (.ci/run installs it).
func browserPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser drives one headless Chromium for every subtest, and collects what the page writes
// to its console as errors.
type browser struct {
	t       testing.TB
	ctx     context.Context
	console *consoleLog
}

// consoleLog is what the page reported as errors.
type consoleLog struct {
	mu     sync.Mutex
	errors []string
}

// in returns the browser reporting failures to t, a subtest.
func (b *browser) in(t testing.TB) *browser {
	c := *b
	c.t = t
	return &c
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	path := browserPath()
	if path == "" {
		t.Skip("chromium is not installed; .ci/run installs it (apt-get install chromium)")
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.UserDataDir(t.TempDir()),
			chromedp.WindowSize(1280, 800),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		)...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, console: &consoleLog{}}
	messages := chromedp.Console(ctx)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.console.mu.Lock()
				b.console.errors = append(b.console.errors, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				b.console.mu.Unlock()
			}
		}
	}()
	return b
}

// consoleErrors returns what the page reported as errors so far.
func (b *browser) consoleErrors() []string {
	b.console.mu.Lock()
	defer b.console.mu.Unlock()
	return append([]string(nil), b.console.errors...)
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

func evaluate[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
	return v
}

// waitFor polls the page until js is true, within a real-time deadline generous enough for a
// slow machine; it returns how long that took.
func (b *browser) waitFor(what, js string) time.Duration {
	b.t.Helper()
	start := time.Now()
	for deadline := start.Add(15 * time.Second); ; {
		if evaluate[bool](b, js) {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: still not so after %v (%s)", what, time.Since(start), js)
		}
		time.Sleep(20 * time.Millisecond) // real time, polling the page: the emulator's clock is manual
	}
}

// screenshot saves the page as docs/screenshots/NAME.png when -screenshots is given.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	if !*updateScreenshots {
		return
	}
	raw, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		b.t.Fatal(err)
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, img); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join("..", "docs", "screenshots", name+".png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s (%d KB)", path, out.Len()/1024)
}

// consoleProbe is a console error the test makes itself, to show its listener hears them.
const consoleProbe = "dashboard-test-probe"

func isProbe(msg string) bool { return strings.Contains(msg, consoleProbe) }

// TestDashboardInBrowser drives the dashboard in headless Chromium against an emulator on a
// manual clock: the page must follow what the API does, and steer the emulator itself.
func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser")
	}
	s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml", Seeded: true, Seed: 11})
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Shutdown() // ends the page's event stream, so the test server can close
		ts.Close()
	})
	top := startBrowser(t)
	b := top
	b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/"))
	b.waitFor("the event stream is live", `document.querySelector('#conn').dataset.state === 'live'`)
	// The console listener works: a probe error reaches it (and is set aside at the end).
	b.do(chromedp.Evaluate[chromedp.Void](`console.error('` + consoleProbe + `')`))
	for deadline := time.Now().Add(15 * time.Second); !slices.ContainsFunc(b.consoleErrors(), isProbe); {
		if time.Now().After(deadline) {
			t.Fatal("a console.error from the page never reached the test's listener")
		}
		time.Sleep(20 * time.Millisecond)
	}

	gen := func(key, idem, model string, input map[string]any, headers ...string) api.Job {
		t.Helper()
		rec := startGeneration(t, s, key, idem, model, input, headers...)
		if rec.Code != 202 {
			t.Fatalf("generate: %d %s", rec.Code, rec.Body)
		}
		return decode[api.Job](t, rec)
	}
	row := func(id string) string {
		return fmt.Sprintf(`document.querySelector('#jobs-table tr[data-id="%s"]')`, id)
	}
	// fitIn checks that each element js lists shows all of its text: no ellipsis, no clipping.
	fitIn := func(t *testing.T, b *browser, what, js string) {
		t.Helper()
		if bad := evaluate[[]string](b, `[...`+js+`].filter(e => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1).map(e => e.textContent + ' (' + e.scrollWidth + '×' + e.scrollHeight + ' in ' + e.clientWidth + '×' + e.clientHeight + ')')`); len(bad) > 0 {
			t.Errorf("%s cut off: %q", what, bad)
		}
	}
	statusIs := func(id, status string) string {
		return fmt.Sprintf(`(() => { const r = %s; return !!r && r.cells[5].textContent === %q })()`, row(id), status)
	}

	var picture api.Job
	t.Run("a generated job appears live", func(t *testing.T) {
		b := top.in(t)
		picture = gen("key_a", "pic", "test/pixel", map[string]any{"prompt": "a lighthouse", "num_images": 2})
		took := b.waitFor("the new job is in the table", `!!`+row(picture.ID))
		// The page learns of the job from the event stream, not by reloading: the contract is
		// "within a second"; the deadline above is longer only so a loaded machine cannot fail it.
		t.Logf("the job appeared in the table %v after it was created", took.Round(time.Millisecond))
		if took > time.Second {
			t.Logf("slower than the one second the dashboard aims for")
		}
		if got := evaluate[string](b, row(picture.ID)+`.cells[5].textContent`); got != "queued" {
			t.Errorf("status cell %q; want queued", got)
		}
		if got := evaluate[string](b, row(picture.ID)+`.cells[3].textContent`); got != "image" {
			t.Errorf("media type cell %q; want image", got)
		}
	})

	t.Run("advancing the clock from the page finishes the job and shows its images", func(t *testing.T) {
		b := top.in(t)
		b.do(chromedp.Click(chromedp.CSS(`#jobs-table tr[data-id="` + picture.ID + `"]`)))
		b.waitFor("the detail shows the job", `!!document.querySelector('#jd-head') && document.querySelector('#jd-head').textContent.includes(`+fmt.Sprintf("%q", picture.ID)+`)`)
		b.do(chromedp.Click(chromedp.CSS(`[data-advance="1m"]`)))
		b.waitFor("the job succeeded", statusIs(picture.ID, "succeeded"))
		b.waitFor("both thumbnails loaded", `(() => { const imgs = [...document.querySelectorAll('#jd-outputs img')];
			return imgs.length === 2 && imgs.every(i => i.complete && i.naturalWidth > 0) })()`)
		b.waitFor("each output says until when its file is kept", `(() => { const ex = [...document.querySelectorAll('#jd-outputs .expiry')];
			return ex.length === 2 && ex.every(e => e.textContent.startsWith('kept until 2026-01-01T01:0')) })()`)
		if got := decode[map[string]any](t, control(t, s, "GET", "/_emulator/clock", nil)); got["now"] != "2026-01-01T00:01:00Z" {
			t.Errorf("the emulator's clock is at %v; want a minute on", got["now"])
		}
		if got := evaluate[string](b, `document.querySelector('#clock-now').textContent`); got != "2026-01-01 00:01:00.000" {
			t.Errorf("the page's clock shows %q", got)
		}
	})

	t.Run("an audio output plays for its duration", func(t *testing.T) {
		b := top.in(t)
		voice := gen("key_a", "voice", "test/voice", map[string]any{"text": "Hello from the emulator, this is a longer sentence to speak."})
		if rec := control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "1m"}); rec.Code != 200 {
			t.Fatal(rec.Body)
		}
		done := decode[api.Job](t, control(t, s, "GET", "/_emulator/jobs/"+voice.ID, nil))
		if done.Status != "succeeded" || len(done.Outputs) != 1 || done.Outputs[0].Duration <= 0 {
			t.Fatalf("voice job: %s, outputs %+v", done.Status, done.Outputs)
		}
		b.waitFor("the voice job is in the table", statusIs(voice.ID, "succeeded"))
		b.do(chromedp.Click(chromedp.CSS(`#jobs-table tr[data-id="` + voice.ID + `"]`)))
		b.waitFor("the audio player has its metadata", `(() => { const a = document.querySelector('#jd-outputs audio');
			return !!a && a.readyState >= 1 && isFinite(a.duration) })()`)
		got := evaluate[float64](b, `document.querySelector('#jd-outputs audio').duration`)
		if want := done.Outputs[0].Duration; math.Abs(got-want) > 0.05 {
			t.Errorf("audio.duration = %v; want the job's duration_seconds %v", got, want)
		}
	})

	t.Run("forcing a failure from the page refunds the credits", func(t *testing.T) {
		b := top.in(t)
		j := gen("key_b", "doomed", "test/pixel", map[string]any{"prompt": "a doomed fox", "num_images": 4})
		b.waitFor("the job is in the table", `!!`+row(j.ID))
		b.do(chromedp.Click(chromedp.CSS(`#jobs-table tr[data-id="` + j.ID + `"]`)))
		b.waitFor("the fail button is ready", `(() => { const h = document.querySelector('#jd-head'), f = document.querySelector('#force-fail');
			return !!h && h.textContent.includes(`+fmt.Sprintf("%q", j.ID)+`) && !!f && !f.disabled })()`)
		b.do(chromedp.SetValue(chromedp.CSS(`#fail-code`), "provider_timeout"),
			chromedp.Click(chromedp.CSS(`#force-fail`)))
		b.waitFor("the table shows the failure", statusIs(j.ID, "failed"))
		got := decode[api.Job](t, control(t, s, "GET", "/_emulator/jobs/"+j.ID, nil))
		if got.Status != "failed" || got.CreditStatus != "refunded" || got.Error == nil || got.Error.Code != "provider_timeout" {
			t.Errorf("job after the page failed it: %s, %s, %+v", got.Status, got.CreditStatus, got.Error)
		}
		accounts := decode[struct {
			Data []struct {
				Account                            string
				Available, Held, Charged, Refunded int64
			} `json:"data"`
		}](t, control(t, s, "GET", "/_emulator/accounts", nil))
		for _, a := range accounts.Data {
			if a.Account == "acct_b" && (a.Held != 0 || a.Refunded != j.Credits || a.Charged != 0) {
				t.Errorf("acct_b after the refund: %+v; want nothing held, %d refunded", a, j.Credits)
			}
		}
		b.waitFor("the detail says the control API ended it", `document.querySelector('#jd-plan').textContent.includes('the control API')`)
		if !evaluate[bool](b, `['#force-succeed', '#force-fail', '#fail-code'].every(s => document.querySelector(s).disabled)`) {
			t.Error("the force buttons or the fail-code picker stay enabled on a finished job")
		}
	})

	t.Run("a fault added from the page fails the next API call", func(t *testing.T) {
		b := top.in(t)
		b.do(chromedp.Click(chromedp.CSS(`.tabs [data-tab=scenario]`)))
		b.waitFor("the scenario view is shown", `!document.querySelector('#view-scenario').hidden && document.querySelector('#scenario-select').options.length > 0`)
		b.do(
			chromedp.SetValue(chromedp.CSS(`#fault-form [name=method]`), "GET"),
			chromedp.SetValue(chromedp.CSS(`#fault-form [name=path]`), "/v1/models"),
			chromedp.SetValue(chromedp.CSS(`#fault-form [name=status]`), "503"),
			chromedp.SetValue(chromedp.CSS(`#fault-form [name=count]`), "1"),
			chromedp.Click(chromedp.CSS(`#fault-form button[type=submit]`)),
		)
		b.waitFor("the fault is listed", `document.querySelectorAll('#faults-table tbody tr').length === 1`)
		first := call(t, s, "GET", "/v1/models", "key_a", nil)
		if first.Code != 503 || !strings.Contains(first.Body.String(), `"code":"service_unavailable"`) {
			t.Errorf("the call after the fault: %d %s; want 503 service_unavailable", first.Code, first.Body)
		}
		if again := call(t, s, "GET", "/v1/models", "key_a", nil); again.Code != 200 {
			t.Errorf("the call after that: %d; the fault was for one call", again.Code)
		}
		b.waitFor("the fault shows it fired", `(() => { const r = document.querySelector('#faults-table tbody tr');
			return !r || r.cells[5].textContent === '1' })()`)
		if got := evaluate[string](b, `document.querySelector('#faults-table tbody tr').cells[4].textContent`); got != "spent" {
			t.Errorf("a spent fault shows %q left; want spent", got)
		}
		fitIn(t, b, "the faults table", `document.querySelectorAll('#faults-table tbody td')`)
		b.screenshot("dashboard-faults")
	})

	t.Run("the journal shows requests with their bodies", func(t *testing.T) {
		b := top.in(t)
		b.do(chromedp.Click(chromedp.CSS(`.tabs [data-tab=journal]`)))
		b.waitFor("the journal lists the 503", `[...document.querySelectorAll('#journal-table tbody tr')].some(r => r.cells[4].textContent.startsWith('503'))`)
		b.do(chromedp.SetValue(chromedp.CSS(`#journal-path`), "/v1/generate"),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('#journal-path').dispatchEvent(new Event('input'))`))
		b.waitFor("the filter leaves the generations", `(() => { const rows = [...document.querySelectorAll('#journal-table tbody tr')];
			return rows.length === 3 && rows.every(r => r.cells[3].textContent === '/v1/generate') })()`)
		b.do(chromedp.Click(chromedp.CSS(`#journal-table tbody tr`)))
		b.waitFor("the entry's bodies are shown", `document.querySelectorAll('#entry-detail pre.json').length === 2 &&
			document.querySelector('#entry-detail').textContent.includes('a doomed fox')`)
		b.screenshot("dashboard-journal")
	})

	t.Run("the coverage panel counts the cases as they happen", func(t *testing.T) {
		b := top.in(t)
		b.do(chromedp.Click(chromedp.CSS(`.tabs [data-tab=coverage]`)))
		covRow := func(id string) string { return `document.querySelector('#coverage-table tr[data-case="` + id + `"]')` }
		b.waitFor("the injected 503 is counted", `!document.querySelector('#view-coverage').hidden && !!`+covRow("GET /v1/models 503 service_unavailable")+
			` && `+covRow("GET /v1/models 503 service_unavailable")+`.cells[2].textContent === '1'`)
		if n := evaluate[int](b, `document.querySelectorAll('#coverage-table tbody tr').length`); n < 70 {
			t.Errorf("the panel lists %d cases; want the contract's whole list", n)
		}
		if !evaluate[bool](b, covRow("fault error")+`.classList.contains('seen') && `+covRow("job canceled")+`.classList.contains('unseen')`) {
			t.Error("seen and unseen cases are not told apart")
		}
		// A new error answer shows up without a reload.
		call(t, s, "GET", "/v1/models", "", nil)
		b.waitFor("the 401 is counted live", covRow("GET /v1/models 401 unauthenticated")+`.cells[2].textContent === '1'`)
		if got := evaluate[string](b, `document.querySelector('#coverage-summary').textContent`); !strings.HasSuffix(got, "cases exercised") {
			t.Errorf("the summary reads %q", got)
		}
		b.do(chromedp.Click(chromedp.CSS(`#coverage-unseen`)))
		b.waitFor("only unseen cases are listed", `!`+covRow("GET /v1/models 401 unauthenticated")+` && !!`+covRow("job canceled"))
		b.do(chromedp.Click(chromedp.CSS(`#coverage-unseen`)),
			chromedp.SetValue(chromedp.CSS(`#coverage-scope`), "run"),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('#coverage-scope').dispatchEvent(new Event('change'))`))
		b.waitFor("the whole run is shown", `document.querySelector('#coverage-summary').textContent.endsWith('in the whole run')`)
		fitIn(t, b, "the coverage table", `document.querySelectorAll('#coverage-table tbody td')`)
		b.screenshot("dashboard-coverage")
		b.do(chromedp.SetValue(chromedp.CSS(`#coverage-scope`), "tenant"),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('#coverage-scope').dispatchEvent(new Event('change'))`))
	})

	t.Run("a /v1 call makes the jobs view fetch nothing", func(t *testing.T) {
		b := top.in(t)
		b.do(chromedp.Click(chromedp.CSS(`.tabs [data-tab=jobs]`)))
		b.waitFor("the jobs view is shown", `!document.querySelector('#view-jobs').hidden && document.querySelectorAll('#jobs-table tbody tr').length > 0`)
		// Every request the page makes from here is counted, by path.
		// A request an earlier step started (the coverage view's, say) may end after the clear:
		// only those started from here count.
		b.do(chromedp.Evaluate[chromedp.Void](`performance.clearResourceTimings(); performance.setResourceTimingBufferSize(10000); window.countFrom = performance.now()`))
		// Five journal changes, each its own event: the test's own stream sees each go out, and
		// the page's stream is sent the same.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res, stream := openEvents(t, ctx, ts.URL)
		defer res.Body.Close()
		if name, _ := stream.nextEvent(); name != "hello" {
			t.Fatalf("first event %s", name)
		}
		for range 5 {
			call(t, s, "GET", "/v1/models", "key_a", nil) // a journal entry: not shown in this view
			if name, data := stream.nextEvent(); name != "change" || fmt.Sprint(data["changed"]) != "[journal]" {
				t.Fatalf("after a /v1 read: %s %v", name, data)
			}
		}
		// A job made afterwards is shown: by then the events of the five calls have been read.
		later := gen("key_a", "after-reads", "test/pixel", map[string]any{"prompt": "after the reads"})
		b.waitFor("the new job is in the table", `!!`+row(later.ID))
		fetched := evaluate[[]string](b, `performance.getEntriesByType('resource').filter(e => e.startTime >= window.countFrom).map(e => new URL(e.name).pathname)`)
		for _, p := range fetched {
			if p != "/_emulator/jobs" {
				t.Errorf("the jobs view fetched %s; it needs /_emulator/jobs alone (clock and next job come with the events)", p)
			}
		}
		if n := len(fetched); n == 0 || n > 2 {
			t.Errorf("the jobs view made %d requests for five journal changes and one job (%q); want one or two", n, fetched)
		}
		// Jobs of every kind so far: images and audio, queued, succeeded and failed, at 100%.
		fitIn(t, b, "the jobs table", `document.querySelectorAll('#jobs-table tbody td')`)
	})

	t.Run("the address names the tenant, view and job", func(t *testing.T) {
		b := top.in(t)
		b.do(chromedp.Click(chromedp.CSS(`#jobs-table tr[data-id="` + picture.ID + `"]`)))
		b.waitFor("the address names the job", `location.hash === '#tenant=default&view=jobs&job=`+picture.ID+`'`)
		// A job in another tenant, opened from a link alone, as a test would print it.
		other := gen("key_a.linked", "linked", "test/voice", map[string]any{"text": "In another tenant."})
		link := ts.URL + "/_emulator/ui/#tenant=linked&view=jobs&job=" + other.ID
		b.do(chromedp.Navigate("about:blank"), chromedp.Navigate(link))
		b.waitFor("the link's tenant and job are shown", `document.querySelector('#tenant').value === 'linked' &&
			!!document.querySelector('#jd-head') && document.querySelector('#jd-head').textContent.includes(`+fmt.Sprintf("%q", other.ID)+`)`)
		b.waitFor("the link's job row is selected", row(other.ID)+`?.getAttribute('aria-selected') === 'true'`)
		// The journal view and an entry, by link too.
		b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/#tenant=default&view=journal&entry=1"))
		b.waitFor("the journal entry of the link is shown", `!document.querySelector('#view-journal').hidden &&
			document.querySelector('#entry-detail').dataset.v === '1'`)
		b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/#tenant=default&view=jobs"))
		b.waitFor("back on the default tenant's jobs", `document.querySelector('#tenant').value === 'default' && !!`+row(picture.ID))
	})

	t.Run("nothing is cut off", func(t *testing.T) {
		b := top.in(t)
		// The default catalog's longest model ids, a long problem code in the journal, a long
		// tenant name, and a job due next.
		s := simServer(t, Config{Seeded: true, Seed: 3})
		ts := httptest.NewServer(s)
		t.Cleanup(func() {
			s.Shutdown()
			ts.Close()
		})
		var ids []string
		for i, model := range []string{"fal-ai/minimax/hailuo-02/standard/text-to-video", "fal-ai/bytedance/seedance/v1/lite/text-to-video"} {
			rec := startGeneration(t, s, "mg_test_all", fmt.Sprint("long-", i), model, map[string]any{"prompt": "a long id"})
			if rec.Code != 202 {
				t.Fatalf("generate %s: %d %s", model, rec.Code, rec.Body)
			}
			ids = append(ids, decode[api.Job](t, rec).ID)
		}
		control(t, s, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 422, "code": "idempotency_key_reused", "count": 1})
		call(t, s, "GET", "/v1/models", "mg_test_all", nil)
		if rec := startGeneration(t, s, "mg_test_all.a-rather-long-tenant-name-for-a-test", "long-tenant", "fal-ai/flux/schnell", map[string]any{"prompt": "x"}); rec.Code != 202 {
			t.Fatalf("generate in the long tenant: %d %s", rec.Code, rec.Body)
		}
		b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/#tenant=a-rather-long-tenant-name-for-a-test&view=jobs"))
		b.waitFor("the long tenant is chosen", `document.querySelector('#tenant').value.startsWith('a-rather-long')`)
		if !evaluate[bool](b, `(() => { const sel = document.querySelector('#tenant'), c = document.createElement('canvas').getContext('2d');
			c.font = getComputedStyle(sel).font; return c.measureText(sel.selectedOptions[0].text).width + 20 <= sel.clientWidth })()`) {
			t.Errorf("the tenant picker cuts off %q", evaluate[string](b, `document.querySelector('#tenant').selectedOptions[0].text`))
		}
		b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/#tenant=default&view=jobs"))
		b.waitFor("the long ids are listed", `!!`+row(ids[0])+` && !!`+row(ids[1]))
		b.waitFor("the next transition is shown", `document.querySelector('#next-due').textContent.startsWith('next:')`)
		fits := func(what, js string) { fitIn(t, b, what, js) }
		fits("the jobs table", `document.querySelectorAll('#jobs-table tbody td')`)
		if got := evaluate[string](b, row(ids[0])+`.cells[2].textContent`); got != "fal-ai/minimax/hailuo-02/standard/text-to-video" {
			t.Errorf("the model cell reads %q", got)
		}
		if !evaluate[bool](b, `[...document.querySelectorAll('#jobs-table tbody tr')].every(r => r.getBoundingClientRect().height <= 29)`) {
			t.Error("a long model id makes its row taller than the others")
		}
		fits("the next transition", `[document.querySelector('#next-due')]`)
		if !evaluate[bool](b, `(() => { const r = document.querySelector('#next-due').getBoundingClientRect(); return r.right <= window.innerWidth && r.width > 0 })()`) {
			t.Error("the next transition runs off the page")
		}
		b.do(chromedp.Click(chromedp.CSS(`.tabs [data-tab=journal]`)))
		b.waitFor("the journal lists the long code", `[...document.querySelectorAll('#journal-table tbody tr')].some(r => r.cells[4].textContent.includes('idempotency_key_reused'))`)
		fits("status codes", `document.querySelectorAll('#journal-table tbody td:nth-child(5)')`)
	})

	t.Run("accounts and dark mode", func(t *testing.T) {
		b := top.in(t)
		b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/#tenant=default&view=accounts"))
		b.waitFor("the accounts are listed", `document.querySelectorAll('#accounts-table tbody tr').length > 0`)
		if !*updateScreenshots {
			return
		}
		// A fuller table for the pictures: jobs in every state.
		for i, outcome := range []string{"succeed", "fail", "expire", "slow", "succeed", "content_policy"} {
			gen([]string{"key_a", "key_b"}[i%2], "shot"+outcome+fmt.Sprint(i), "test/pixel", map[string]any{"prompt": "picture " + fmt.Sprint(i)}, "X-Emulator-Outcome", outcome)
			if i == 3 {
				control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "2s"})
			}
		}
		gen("key_a", "shot-late", "test/voice", map[string]any{"text": "A job still in the queue."})
		b.do(chromedp.Click(chromedp.CSS(`.tabs [data-tab=jobs]`)))
		b.waitFor("the table has every job", `document.querySelectorAll('#jobs-table tbody tr').length === 11`)
		b.do(chromedp.Click(chromedp.CSS(`#jobs-table tr[data-id="` + picture.ID + `"]`)))
		b.waitFor("the thumbnails loaded", `(() => { const imgs = [...document.querySelectorAll('#jd-outputs img')];
			return imgs.length === 2 && imgs.every(i => i.complete && i.naturalWidth > 0) })()`)
		b.screenshot("dashboard-jobs")
		dark := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
			return chromedp.Void{}, err
		}
		b.do(dark)
		b.screenshot("dashboard-dark")
	})

	t.Run("report", func(t *testing.T) {
		b := top.in(t)
		// The same input the model refuses, twice: retry-unchanged.
		for range 2 {
			if rec := call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": 5}}); rec.Code != 422 {
				t.Fatalf("quote: %d %s", rec.Code, rec.Body)
			}
		}
		b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/#tenant=default&view=report"))
		b.waitFor("the report lists the finding", `[...document.querySelectorAll('#report-table tbody tr')].some(r => r.dataset.rule === 'retry-unchanged' && r.cells[3].textContent.includes(','))`)
		if got := evaluate[string](b, `document.querySelector('#report-summary').textContent`); !strings.Contains(got, "retry-unchanged") {
			t.Errorf("the summary reads %q", got)
		}
		b.do(chromedp.Click(chromedp.CSS(`#report-run`)))
		b.waitFor("the whole run's report names the tenant", `[...document.querySelectorAll('#report-table tbody tr')].some(r => r.cells[2].textContent.startsWith('default: '))`)
		b.do(chromedp.Click(chromedp.CSS(`#report-run`)))
		b.waitFor("the tenant's report again", `[...document.querySelectorAll('#report-table tbody tr')].some(r => r.dataset.rule === 'retry-unchanged' && !r.cells[2].textContent.startsWith('default: '))`)

		// At 1400×1000 every column is readable: the reason wraps in a column of its own width.
		b.do(chromedp.EmulateViewport(1400, 1000))
		defer b.do(chromedp.EmulateViewport(1280, 800))
		widths := evaluate[map[string]float64](b, `(() => { const r = document.querySelector('#report-table tbody tr');
			return { rule: r.cells[0].clientWidth, reason: r.cells[2].clientWidth, entries: r.cells[3].clientWidth, table: document.querySelector('#report-table').clientWidth } })()`)
		if widths["reason"] < 400 || widths["rule"] < 120 || widths["entries"] < 80 {
			t.Errorf("report columns at 1400×1000: %v; want the reason at least 400 px wide", widths)
		}
		fitIn(t, b, "the report's rule and entries", `[...document.querySelectorAll('#report-table tbody tr')].flatMap(r => [r.cells[0], r.cells[3]])`)
		b.screenshot("dashboard-report")

		// A finding's entries link to the journal, which shows each entry's seq.
		link := `document.querySelector('#report-table tbody tr[data-rule="retry-unchanged"] td:nth-child(4) a')`
		seq := evaluate[string](b, link+`?.textContent ?? ''`)
		if seq == "" {
			t.Fatalf("the finding's journal entries are not links: %q", evaluate[string](b, `document.querySelector('#report-table tbody tr[data-rule="retry-unchanged"] td:nth-child(4)').innerHTML`))
		}
		b.do(chromedp.Click(chromedp.CSS(`#report-table tbody tr[data-rule="retry-unchanged"] td:nth-child(4) a`)))
		b.waitFor("the linked entry is open in the journal", `!document.querySelector('#view-journal').hidden &&
			document.querySelector('#entry-detail').dataset.v === `+fmt.Sprintf("%q", seq))
		b.waitFor("the journal shows each entry's seq", `[...document.querySelectorAll('#journal-table tbody tr')].some(r =>
			r.dataset.seq === `+fmt.Sprintf("%q", seq)+` && r.cells[0].textContent === `+fmt.Sprintf("%q", seq)+`)`)
	})

	t.Run("the scenario view says the forward-compatibility mode is on", func(t *testing.T) {
		b := top.in(t)
		putScenario(t, s, map[string]any{"name": "evolving", "evolution": map[string]any{"members": true, "status": true}})
		defer func() {
			if rec := control(t, s, "PUT", "/_emulator/scenario", map[string]any{"name": "default"}); rec.Code != 200 {
				t.Errorf("back to the default scenario: %d %s", rec.Code, rec.Body)
			}
		}()
		b.do(chromedp.Click(chromedp.CSS(`.tabs [data-tab=scenario]`)))
		b.waitFor("the mode's kinds are shown", `document.querySelector('#scenario-info').textContent.includes('evolutionon: members, status')`)
	})

	t.Run("a job behind a concurrency limit shows its place in the line", func(t *testing.T) {
		b := top.in(t)
		putScenario(t, s, map[string]any{"name": "limited", "concurrency": []any{map[string]any{"limit": 1}}})
		defer func() {
			if rec := control(t, s, "PUT", "/_emulator/scenario", map[string]any{"name": "default"}); rec.Code != 200 {
				t.Errorf("back to the default scenario: %d %s", rec.Code, rec.Body)
			}
		}()
		gen("key_b", "limited-1", "test/pixel", map[string]any{"prompt": "first in line"})
		second := gen("key_b", "limited-2", "test/pixel", map[string]any{"prompt": "second in line"})
		if second.QueuePosition != 1 {
			t.Fatalf("the second job waits at %d", second.QueuePosition)
		}
		b.do(chromedp.Click(chromedp.CSS(`.tabs [data-tab=jobs]`)))
		b.waitFor("the table shows its place", statusIs(second.ID, "queued#1"))
		fitIn(t, b, "the status cell", `[`+row(second.ID)+`.cells[5]]`)
		b.do(chromedp.Click(chromedp.CSS(`#jobs-table tr[data-id="` + second.ID + `"]`)))
		b.waitFor("the detail shows its place", `(() => { const d = document.querySelector('#jd-summary'); return !!d && d.textContent.includes('queue position1 in the line') })()`)
		b.do(chromedp.Click(chromedp.CSS(`[data-advance="1m"]`)))
		b.waitFor("the table shows it ran once the first ended", statusIs(second.ID, "succeeded"))
	})

	t.Run("webhook deliveries are listed, the secret nowhere", func(t *testing.T) {
		b := top.in(t)
		const secret = "whsec_ZGFzaGJvYXJkLXdlYmhvb2stc2VjcmV0"
		if rec := call(t, s, "PUT", "/_emulator/webhooks", "", map[string]any{"url": "http://127.0.0.1:1/hook", "secret": secret}); rec.Code != 200 {
			t.Fatalf("PUT webhooks: %d %s", rec.Code, rec.Body)
		}
		gen("key_a", "dash-hook", "test/pixel", map[string]any{"prompt": "a kite"})
		call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "10m"})
		b.do(chromedp.Click(chromedp.CSS(`.tabs [data-tab=scenario]`)))
		b.waitFor("an attempt is listed", `[...document.querySelectorAll('#webhooks-table tbody tr')].some(r => r.cells[7].textContent.includes('refused'))`)
		if page := evaluate[string](b, `document.body.innerText`); strings.Contains(page, "ZGFzaGJvYXJk") || !strings.Contains(page, "127.0.0.1:1/hook") {
			t.Errorf("the page shows the secret, or not the webhook's url")
		}
		call(t, s, "DELETE", "/_emulator/webhooks", "", nil)
	})

	t.Run("a snapshot downloads, and opens into a new tenant", func(t *testing.T) {
		b := top.in(t)
		dir := t.TempDir()
		b.do(func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
				Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
			return chromedp.Void{}, err
		})
		b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/#tenant=default&view=jobs"))
		b.waitFor("the jobs are listed", `document.querySelector('#conn').dataset.state === 'live' && !!`+row(picture.ID))
		jobs := len(decode[api.Snapshot](t, control(t, s, "GET", "/_emulator/snapshot", nil)).Jobs)

		b.do(chromedp.Click(chromedp.CSS(`#snapshot-download`)))
		var path string
		for deadline := time.Now().Add(15 * time.Second); path == ""; {
			found, _ := filepath.Glob(filepath.Join(dir, "snapshot-default-*.json"))
			if len(found) == 1 {
				path = found[0]
				break
			}
			if time.Now().After(deadline) {
				entries, _ := os.ReadDir(dir)
				t.Fatalf("no snapshot-default-*.json downloaded to %s (%v); the page says %q", dir, entries, evaluate[string](b, `document.querySelector('#notice').textContent`))
			}
			time.Sleep(20 * time.Millisecond) // real time: the browser writes the file
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc api.Snapshot
		if err := json.Unmarshal(data, &doc); err != nil || doc.Tenant != "default" || len(doc.Jobs) != jobs || doc.Journal == nil {
			t.Fatalf("downloaded %s: %v, tenant %q, %d jobs (want %d), journal %v", filepath.Base(path), err, doc.Tenant, len(doc.Jobs), jobs, doc.Journal != nil)
		}

		// Opened into a new tenant, named after the snapshot's own.
		b.do(chromedp.Click(chromedp.CSS(`#snapshot-open`)),
			chromedp.SetUploadFiles(chromedp.CSS(`#snapshot-file`), []string{path}))
		b.waitFor("a new tenant's name is offered", `document.querySelector('#snapshot-tenant').value === 'default-copy'`)
		b.do(chromedp.Click(chromedp.CSS(`#snapshot-submit`)))
		b.waitFor("the new tenant is shown with the snapshot's jobs", fmt.Sprintf(`document.querySelector('#snapshot-dialog').hidden &&
			document.querySelector('#tenant').value === 'default-copy' && document.querySelectorAll('#jobs-table tbody tr').length === %d &&
			!!%s`, min(jobs, 50), row(picture.ID)))
		copied := call(t, s, "GET", "/_emulator/accounts", "", nil, "X-Emulator-Tenant", "default-copy")
		if original := control(t, s, "GET", "/_emulator/accounts", nil); copied.Code != 200 || copied.Body.String() != original.Body.String() {
			t.Errorf("the new tenant's accounts: %d %s\nwant the default tenant's: %s", copied.Code, copied.Body, original.Body)
		}

		// A document the emulator refuses: its problems are listed, and no tenant is made.
		bad := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(bad, []byte(`{"format": 2}`), 0o644); err != nil {
			t.Fatal(err)
		}
		b.do(chromedp.Click(chromedp.CSS(`#snapshot-open`)),
			chromedp.SetUploadFiles(chromedp.CSS(`#snapshot-file`), []string{bad}),
			chromedp.SetValue(chromedp.CSS(`#snapshot-tenant`), "refused"),
			chromedp.Click(chromedp.CSS(`#snapshot-submit`)))
		b.waitFor("the problems are listed", `!document.querySelector('#snapshot-problems').hidden &&
			document.querySelector('#snapshot-errors').textContent.includes('/format') &&
			document.querySelector('#snapshot-errors').textContent.includes('newer than this emulator reads')`)
		if strings.Contains(control(t, s, "GET", "/_emulator/tenants", nil).Body.String(), `"refused"`) {
			t.Error("a refused snapshot made a tenant")
		}
		fitIn(t, b, "the snapshot dialog", `document.querySelectorAll('#snapshot-dialog label, #snapshot-dialog button')`)
		if !evaluate[bool](b, `['#snapshot-download', '#snapshot-open'].every(s => { const r = document.querySelector(s).getBoundingClientRect();
			return r.width > 0 && r.right <= window.innerWidth })`) {
			t.Error("the snapshot buttons run off the page")
		}
		b.screenshot("dashboard-snapshot")
		// A name already taken is refused before anything is sent.
		b.do(chromedp.SetUploadFiles(chromedp.CSS(`#snapshot-file`), []string{path}),
			chromedp.SetValue(chromedp.CSS(`#snapshot-tenant`), "default-copy"),
			chromedp.Click(chromedp.CSS(`#snapshot-submit`)))
		b.waitFor("a taken name is refused", `document.querySelector('#snapshot-detail').textContent.includes('already exists')`)
		b.do(chromedp.Click(chromedp.CSS(`#snapshot-cancel`)))
		b.waitFor("the dialog is closed", `document.querySelector('#snapshot-dialog').hidden`)
	})

	// The refused snapshot's 422 is logged by the browser itself, as every failed load is.
	refusedSnapshot := func(msg string) bool {
		return strings.Contains(msg, "status of 422") && strings.Contains(msg, "/_emulator/snapshot")
	}
	if errs := slices.DeleteFunc(top.consoleErrors(), func(m string) bool { return isProbe(m) || refusedSnapshot(m) }); len(errs) > 0 {
		t.Errorf("the page reported %d console error(s):\n%s", len(errs), strings.Join(errs, "\n"))
	}

}
