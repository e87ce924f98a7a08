package emulator

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// controlJobOf is GET /_emulator/jobs/{id}.
func controlJobOf(t testing.TB, h http.Handler, id string) api.ControlJob {
	t.Helper()
	rec := call(t, h, "GET", "/_emulator/jobs/"+id, "", nil)
	if rec.Code != 200 {
		t.Fatalf("control job: %d %s", rec.Code, rec.Body)
	}
	return decode[api.ControlJob](t, rec)
}

// TestControlUploadsAndMediaInputs: GET /_emulator/uploads lists the tenant's live uploads,
// newest first and paged, each with what it decoded to and the jobs that read it; a job's
// control view shows each media input, how it was read and its size; both go through a
// snapshot, and an expired upload leaves the list. On the three clocks, since expiry is the
// clock's.
func TestControlUploadsAndMediaInputs(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"manual", "skip", "real"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := inputsServer(t, func(c *Config) { setClock(c, mode) })
			up := decode[api.Upload](t, uploadRaw(t, s, pngOf(t, 640, 480), "image/png"))
			broken := decode[api.Upload](t, uploadRaw(t, s, []byte("\x89PNG\r\n\x1a\nnot really"), "image/png"))

			made := func(key string, in map[string]any) string {
				t.Helper()
				rec := generate(t, s, "mg_test_all", key, quote(t, s, "mg_test_all", i2i, in), in, "")
				if rec.Code != 202 {
					t.Fatalf("generate %s: %d %s", key, rec.Code, rec.Body)
				}
				return decode[api.Job](t, rec).ID
			}
			first := made("first", i2iInput(up.URL))
			second := made("second", i2iInput(up.URL))
			inline := made("inline", i2iInput("data:image/png;base64,"+base64.StdEncoding.EncodeToString(pngOf(t, 32, 24))))
			standIn := made("stand-in", i2iInput("https://images.example.com/cat.jpg"))
			bad := made("broken", i2iInput(broken.URL))

			page := decode[api.Page[api.ControlUpload]](t, call(t, s, "GET", "/_emulator/uploads", "", nil))
			if page.Total != 2 || len(page.Data) != 2 || page.Data[0].ID != broken.ID || page.Data[1].ID != up.ID {
				t.Fatalf("uploads = %+v", page)
			}
			got := page.Data[1]
			if got.Account != "acct_all" || got.Width != 640 || got.Height != 480 || got.ExpiresAt != up.ExpiresAt || got.URL != up.URL ||
				got.Failure != "" || got.JobCount != 2 || !slices.Equal(got.Jobs, []string{second, first}) {
				t.Errorf("the PNG's listing = %+v", got)
			}
			if b := page.Data[0]; b.Failure != "input_undecodable" || b.Width != 0 || !slices.Equal(b.Jobs, []string{bad}) {
				t.Errorf("the broken upload's listing = %+v", b)
			}
			if p := decode[api.Page[api.ControlUpload]](t, call(t, s, "GET", "/_emulator/uploads?limit=1&offset=1", "", nil)); p.Total != 2 || len(p.Data) != 1 || p.Data[0].ID != up.ID || p.HasMore {
				t.Errorf("the second page = %+v", p)
			}
			if rec := call(t, s, "GET", "/_emulator/uploads?limit=0", "", nil); rec.Code != 400 {
				t.Errorf("limit=0: %d", rec.Code)
			}

			want := map[string]api.MediaInput{
				first: {Member: "image_url", Pointer: "/input/image_url", Source: "upload", URL: up.URL, Upload: up.ID, Read: true,
					ContentType: "image/png", Width: 640, Height: 480, SizeBytes: up.SizeBytes},
				inline: {Member: "image_url", Pointer: "/input/image_url", Source: "data", URL: "data:image/png", Read: true,
					ContentType: "image/png", Width: 32, Height: 24, SizeBytes: int64(len(pngOf(t, 32, 24)))},
				standIn: {Member: "image_url", Pointer: "/input/image_url", Source: "stand_in", URL: "https://images.example.com/cat.jpg",
					ContentType: "image/jpeg", Width: 1024, Height: 1024, SizeBytes: 1 << 20},
				bad: {Member: "image_url", Pointer: "/input/image_url", Source: "upload", URL: broken.URL, Upload: broken.ID, Read: true,
					ContentType: "image/png", SizeBytes: broken.SizeBytes, Failure: "input_undecodable"},
			}
			check := func(when string) {
				t.Helper()
				for id, w := range want {
					j := controlJobOf(t, s, id)
					if len(j.MediaInputs) != 1 || j.MediaInputs[0] != w {
						t.Errorf("%s: job %s media inputs = %+v, want %+v", when, id, j.MediaInputs, w)
					}
				}
			}
			check("made")
			// The list of jobs is not the place for them: only a job's own view shows them.
			if all := call(t, s, "GET", "/_emulator/jobs", "", nil); strings.Contains(all.Body.String(), "media_inputs") {
				t.Errorf("the job list shows media inputs")
			}

			snap := call(t, s, "GET", "/_emulator/snapshot", "", nil)
			if rec := call(t, s, "POST", "/_emulator/reset", "", nil); rec.Code != 200 {
				t.Fatalf("reset: %d", rec.Code)
			}
			if p := decode[api.Page[api.ControlUpload]](t, call(t, s, "GET", "/_emulator/uploads", "", nil)); p.Total != 0 || p.Data == nil {
				t.Errorf("after a reset: %+v", p)
			}
			if rec := call(t, s, "PUT", "/_emulator/snapshot", "", snap.Body.String()); rec.Code != 200 {
				t.Fatalf("restore: %d %s", rec.Code, rec.Body)
			}
			check("restored")
			if p := decode[api.Page[api.ControlUpload]](t, call(t, s, "GET", "/_emulator/uploads", "", nil)); p.Total != 2 || !slices.Equal(p.Data[1].Jobs, []string{second, first}) {
				t.Errorf("restored uploads = %+v", p)
			}

			// Past the upload TTL the uploads leave the list; the jobs keep what they read.
			call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "2h"})
			if p := decode[api.Page[api.ControlUpload]](t, call(t, s, "GET", "/_emulator/uploads", "", nil)); p.Total != 0 || len(p.Data) != 0 {
				t.Errorf("expired uploads listed: %+v", p)
			}
			check("expired")
		})
	}
}

// TestMediaInputsAbsentWhileNotFetched: with inputs not fetched a job records none, and
// the uploads list is empty, not refused.
func TestMediaInputsAbsentWhileNotFetched(t *testing.T) {
	t.Parallel()
	s := inputsServer(t, func(c *Config) { c.Inputs = "" })
	in := i2iInput("http://127.0.0.1:5173/cat.png")
	rec := generate(t, s, "mg_test_all", "off", quote(t, s, "mg_test_all", i2i, in), in, "")
	if rec.Code != 202 {
		t.Fatalf("generate: %d %s", rec.Code, rec.Body)
	}
	j := call(t, s, "GET", "/_emulator/jobs/"+decode[api.Job](t, rec).ID, "", nil)
	if strings.Contains(j.Body.String(), "media_inputs") {
		t.Errorf("a job made with inputs off shows media inputs: %s", j.Body)
	}
	if p := call(t, s, "GET", "/_emulator/uploads", "", nil); p.Code != 200 || decode[api.Page[api.ControlUpload]](t, p).Total != 0 {
		t.Errorf("uploads with inputs off: %d %s", p.Code, p.Body)
	}
}
