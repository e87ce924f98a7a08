package emulator

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

// TestMediaInputsFetchedAndOutputs: an allowed host's file is recorded as fetched with its
// decoded size (or the failure it fails the job with), and a job's output as an output.
func TestMediaInputsFetchedAndOutputs(t *testing.T) {
	t.Parallel()
	img := pngOf(t, 96, 64)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cat.png" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(img)
	}))
	t.Cleanup(files.Close)
	s := inputsServer(t, func(c *Config) { c.InputsAllow = []string{strings.TrimPrefix(files.URL, "http://")} })
	made := func(key string, in map[string]any) string {
		t.Helper()
		rec := generate(t, s, "mg_test_all", key, quote(t, s, "mg_test_all", i2i, in), in, "")
		if rec.Code != 202 {
			t.Fatalf("generate %s: %d %s", key, rec.Code, rec.Body)
		}
		return decode[api.Job](t, rec).ID
	}
	fetched := made("fetched", i2iInput(files.URL+"/cat.png"))
	missing := made("missing", i2iInput(files.URL+"/missing.png"))
	call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "10s"})
	out := jobOf(t, s, fetched).Outputs[0]
	again := made("from-output", i2iInput(out.URL))

	if got := controlJobOf(t, s, fetched).MediaInputs; len(got) != 1 || got[0].Source != "fetched" || !got[0].Read ||
		got[0].Width != 96 || got[0].Height != 64 || got[0].ContentType != "image/png" || got[0].Failure != "" {
		t.Errorf("the fetched input = %+v", got)
	}
	if got := controlJobOf(t, s, missing).MediaInputs; len(got) != 1 || got[0].Source != "fetched" || got[0].Failure != "input_fetch_failed" || got[0].Width != 0 {
		t.Errorf("the missing input = %+v", got)
	}
	if got := controlJobOf(t, s, again).MediaInputs; len(got) != 1 || got[0].Source != "output" || got[0].Upload != "" ||
		got[0].Width != out.Width || got[0].Height != out.Height || got[0].URL != out.URL {
		t.Errorf("the output input = %+v, the output %+v", got, out)
	}
	// Nothing names an upload: the list of uploads is empty.
	if p := decode[api.Page[api.ControlUpload]](t, call(t, s, "GET", "/_emulator/uploads", "", nil)); p.Total != 0 {
		t.Errorf("uploads = %+v", p)
	}
}

// TestSnapshotMediaInputsBounded: a snapshot whose job records more media inputs than a job
// may, or one without its member, is refused with the pointer to them, and nothing changes.
func TestSnapshotMediaInputsBounded(t *testing.T) {
	t.Parallel()
	s := inputsServer(t, nil)
	in := i2iInput("https://images.example.com/cat.png")
	generate(t, s, "mg_test_all", "one", quote(t, s, "mg_test_all", i2i, in), in, "")
	var doc map[string]any
	if err := json.Unmarshal(call(t, s, "GET", "/_emulator/snapshot", "", nil).Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	plan := doc["jobs"].([]any)[0].(map[string]any)["plan"].(map[string]any)
	one := plan["media_inputs"].([]any)[0]
	for _, bad := range [][]any{slices.Repeat([]any{one}, 33), {map[string]any{"member": "", "source": "upload", "url": "x", "pointer": "/input/x", "read": true}}} {
		plan["media_inputs"] = bad
		raw, _ := json.Marshal(doc)
		rec := call(t, s, "PUT", "/_emulator/snapshot", "", string(raw))
		if rec.Code < 400 || rec.Code >= 500 || !strings.Contains(rec.Body.String(), "/jobs/0/plan/media_inputs") {
			t.Errorf("a snapshot with %d bad media inputs: %d %s", len(bad), rec.Code, rec.Body)
		}
	}
}

// TestMediaInputsOfMissingUploads: an upload URL of the emulator's that names no upload (gone,
// or never made, however long its id) fails its job input_fetch_failed, is recorded without an
// upload id, and the tenant's snapshot reads back.
func TestMediaInputsOfMissingUploads(t *testing.T) {
	t.Parallel()
	s := inputsServer(t, nil)
	in := i2iInput("http://example.com/files/uploads/" + strings.Repeat("x", 3000))
	id := decode[api.Job](t, generate(t, s, "mg_test_all", "missing", quote(t, s, "mg_test_all", i2i, in), in, "")).ID
	got := controlJobOf(t, s, id).MediaInputs
	if len(got) != 1 || got[0].Source != "upload" || got[0].Upload != "" || got[0].Failure != "input_fetch_failed" || len(got[0].URL) > 2048 {
		t.Errorf("media inputs = %+v", got)
	}
	snap := call(t, s, "GET", "/_emulator/snapshot", "", nil)
	if rec := call(t, s, "PUT", "/_emulator/snapshot", "", snap.Body.String()); rec.Code != 200 {
		t.Errorf("the snapshot does not read back: %d %s", rec.Code, rec.Body)
	}
}
