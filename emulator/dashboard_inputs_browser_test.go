package emulator

import (
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// TestDashboardInputsInBrowser drives the dashboard in headless Chromium against an emulator
// with inputs fetched: the uploads view lists the tenant's uploads with what they decoded to
// and the jobs that read them (each a link to the job), and a job's detail lists its media
// inputs, how each was read and its size.
func TestDashboardInputsInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser")
	}
	s := inputsServer(t, nil)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Shutdown() // ends the page's event stream, so the test server can close
		ts.Close()
	})
	b := startBrowser(t)
	b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/#view=uploads"))
	b.waitFor("the event stream is live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.waitFor("no uploads yet", `!document.querySelector('#uploads-empty').hidden`)
	// Seven views and the header's controls fit the window: none runs off its right edge.
	if off := evaluate[[]string](b, `['#reset-btn', '#conn', '#help-btn', '.tabs [data-tab=uploads]'].filter(s => { const r = document.querySelector(s).getBoundingClientRect();
		return !(r.width > 0 && r.right <= window.innerWidth) })`); len(off) > 0 {
		t.Errorf("off the page: %q", off)
	}

	up := decode[api.Upload](t, uploadRaw(t, s, pngOf(t, 640, 480), "image/png"))
	made := func(key string, in map[string]any) string {
		t.Helper()
		rec := generate(t, s, "mg_test_all", key, quote(t, s, "mg_test_all", i2i, in), in, "")
		if rec.Code != 202 {
			t.Fatalf("generate %s: %d %s", key, rec.Code, rec.Body)
		}
		return decode[api.Job](t, rec).ID
	}
	job := made("from-upload", i2iInput(up.URL))
	row := fmt.Sprintf(`document.querySelector('#uploads-table tr[data-id=%q]')`, up.ID)
	b.waitFor("the upload is listed with its job", `(() => { const r = `+row+`; return !!r && r.cells[7].textContent.includes(`+fmt.Sprintf("%q", job[:8])+`) })()`)
	cells := evaluate[[]string](b, `[...`+row+`.cells].map(c => c.textContent)`)
	if cells[2] != "acct_all" || cells[3] != "image/png" || cells[5] != "640×480" || cells[6] != "01:00:00.000" {
		t.Errorf("the upload's row: %q", cells)
	}
	// The used-by link opens the job, whose detail lists its media input.
	b.do(chromedp.Click(chromedp.CSS(`#uploads-table tr[data-id="` + up.ID + `"] td.uses a`)))
	b.waitFor("the job's detail lists its media input", `(() => { const li = document.querySelector('#jd-inputs li[data-member=image_url]');
		return !document.querySelector('#view-jobs').hidden && !!li && li.dataset.source === 'upload' })()`)
	text := evaluate[string](b, `document.querySelector('#jd-inputs li').textContent`)
	for _, want := range []string{"image_url", "upload", "read", "image/png 640×480", up.URL} {
		if !strings.Contains(text, want) {
			t.Errorf("the media input %q lacks %q", text, want)
		}
	}

	// A data: URI is shown by its type, and a URL the emulator never contacts as a stand-in.
	inline := made("inline", i2iInput("data:image/png;base64,"+base64.StdEncoding.EncodeToString(pngOf(t, 32, 24))))
	standIn := made("stand-in", i2iInput("https://images.example.com/cat.jpg"))
	for id, want := range map[string][]string{inline: {"data: URI", "read", "32×24", "data:image/png"}, standIn: {"stand-in", "stood in", "1024×1024", "https://images.example.com/cat.jpg"}} {
		b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/#view=jobs&job=" + id))
		b.waitFor("the job's media input is shown", `(() => { const h = document.querySelector('#jd-head'), li = document.querySelector('#jd-inputs li');
			return !!h && h.textContent.includes(`+fmt.Sprintf("%q", id)+`) && !!li })()`)
		text := evaluate[string](b, `document.querySelector('#jd-inputs li').textContent`)
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("job %s's media input %q lacks %q", id, text, w)
			}
		}
	}

	// Past its TTL the upload leaves the list, as the clock moves.
	b.do(chromedp.Navigate(ts.URL + "/_emulator/ui/#view=uploads"))
	b.waitFor("the upload is listed", `!!`+row)
	b.screenshot("dashboard-uploads")
	call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "2h"})
	b.waitFor("the expired upload left the list", `!`+row+` && !document.querySelector('#uploads-empty').hidden`)
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("the page reported %d console error(s):\n%s", len(errs), strings.Join(errs, "\n"))
	}
}
