package emulator

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// i2i is the default catalog's FLUX image-to-image model, whose outputs follow the input image.
const i2i = "fal-ai/flux/dev/image-to-image"

// pngOf is a w×h PNG.
func pngOf(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, x%h, color.NRGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// inputsServer serves the default catalog, seeded, with inputs fetched, on a clock mode.
func inputsServer(t testing.TB, change func(*Config)) *Server {
	t.Helper()
	cfg := Config{ManualClock: true, Seeded: true, Seed: 1}
	cfg.Inputs = "fetch"
	if change != nil {
		change(&cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	<-s.Ready()
	return s
}

// uploadRaw posts a file as the raw body of POST /v1/uploads.
func uploadRaw(t testing.TB, h http.Handler, data []byte, ctype string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("POST", "/v1/uploads", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer mg_test_all")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// heldOf is the account's held credits.
func heldOf(t testing.TB, h http.Handler, account string) (held, available int64) {
	t.Helper()
	rec := call(t, h, "GET", "/_emulator/accounts", "", nil)
	var list struct{ Data []api.Balance }
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatalf("accounts %s: %v", rec.Body, err)
	}
	for _, b := range list.Data {
		if b.Account == account {
			return b.Held, b.Available
		}
	}
	t.Fatalf("no account %s in %s", account, rec.Body)
	return 0, 0
}

func i2iInput(url string) map[string]any {
	return map[string]any{"image_url": url, "prompt": "the same house in winter", "num_images": 2}
}

// TestInputsUploadAndOutputsFollow is the first case: an upload of a 640×480 PNG
// answers 201 with a url and an expires_at an hour ahead; an image-to-image generation with
// that URL succeeds, and every output is 640×480, as the file served says.
func TestInputsUploadAndOutputsFollow(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"manual", "skip", "real"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := inputsServer(t, func(c *Config) { setClock(c, mode) })
			rec := uploadRaw(t, s, pngOf(t, 640, 480), "image/png")
			if rec.Code != 201 {
				t.Fatalf("upload: %d %s", rec.Code, rec.Body)
			}
			up := decode[api.Upload](t, rec)
			created, _ := time.Parse(time.RFC3339Nano, up.CreatedAt)
			expires, _ := time.Parse(time.RFC3339Nano, up.ExpiresAt)
			if expires.Sub(created) != time.Hour || up.Width != 640 || up.Height != 480 || up.ContentType != "image/png" ||
				!strings.HasPrefix(up.URL, "http://example.com/files/uploads/") {
				t.Fatalf("upload = %+v", up)
			}
			// The upload's URL serves the very bytes.
			if got := call(t, s, "GET", strings.TrimPrefix(up.URL, "http://example.com"), "", nil); got.Code != 200 || !bytes.Equal(got.Body.Bytes(), pngOf(t, 640, 480)) {
				t.Fatalf("GET upload: %d, %d bytes", got.Code, got.Body.Len())
			}
			in := i2iInput(up.URL)
			q := quote(t, s, "mg_test_all", i2i, in)
			wait := "?wait=true" // a manual clock moves only when told: the job is read after
			if mode == "manual" {
				wait = ""
			}
			rec = generate(t, s, "mg_test_all", "up-1", q, in, wait)
			job := decode[api.Job](t, rec)
			if mode == "manual" {
				call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "10s"})
				job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "mg_test_all", nil))
			}
			for mode == "real" && (job.Status == "queued" || job.Status == "running") {
				rec := call(t, s, "GET", "/v1/jobs/"+job.ID+"?wait=true", "mg_test_all", nil)
				job = decode[api.Job](t, rec)
			}
			if job.Status != "succeeded" || len(job.Outputs) != 2 {
				t.Fatalf("job = %+v", job)
			}
			for _, o := range job.Outputs {
				if o.Width != 640 || o.Height != 480 {
					t.Errorf("output %dx%d, want 640x480", o.Width, o.Height)
				}
				file := call(t, s, "GET", strings.TrimPrefix(o.URL, "http://example.com"), "", nil)
				cfg, _, err := image.DecodeConfig(bytes.NewReader(file.Body.Bytes()))
				if err != nil || cfg.Width != 640 || cfg.Height != 480 {
					t.Errorf("the file is %dx%d (%v), want 640x480", cfg.Width, cfg.Height, err)
				}
			}
		})
	}
}

// setClock sets a Config's clock mode by name.
func setClock(c *Config, mode string) {
	c.ManualClock, c.SkipClock = mode == "manual", mode == "skip"
}

// TestInputsUnreachableRefusedBeforeHold: a loopback URL answers 422 at /input/image_url before
// anything is held (no job, no credits held, the quote unused, so it still buys a generation),
// and nothing is sent to it.
func TestInputsUnreachableRefusedBeforeHold(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"manual", "skip", "real"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int64
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
			t.Cleanup(target.Close)
			s := inputsServer(t, func(c *Config) { setClock(c, mode) })
			cases := map[string]string{
				"http://127.0.0.1:5173/cat.png":                 "loopback_address",
				target.URL + "/cat.png":                         "loopback_address",
				"https://10.0.0.7/cat.png":                      "private_address",
				"https://169.254.169.254/latest/meta-data":      "metadata_address",
				"https://localhost/cat.png":                     "local_host_name",
				"http://example.com/cat.png":                    "https_only",
				"https://93.184.216.34/cat.png":                 "bare_ip",
				"ftp://example.com/cat.png":                     "scheme",
				"https://printer.local/cat.png":                 "local_host_name",
				"https://[::1]:8080/cat.png":                    "loopback_address",
				"https://storage.internal/bucket/cat.png":       "local_host_name",
				"https://192.168.1.20:8443/uploads/cat.png?x=1": "private_address",
			}
			for url, rule := range cases {
				in := i2iInput(url)
				q := quote(t, s, "mg_test_all", i2i, in)
				rec := generate(t, s, "mg_test_all", "k-"+rule+url, q, in, "")
				p := decode[problemJSON](t, rec)
				body := decode[map[string]any](t, rec)
				if rec.Code != 422 || p.Code != "input_url_refused" || len(p.Errors) != 1 || p.Errors[0].Pointer != "/input/image_url" || body["rule"] != rule {
					t.Errorf("%s: %d %s; want 422 input_url_refused at /input/image_url, rule %s", url, rec.Code, rec.Body, rule)
				}
				// The quote is unused: the same generation through a fixed URL succeeds with it.
				fixed := i2iInput("https://example.com/cat.png")
				if rec := generate(t, s, "mg_test_all", "k2-"+rule+url, q, fixed, ""); rec.Code != 422 || decode[problemJSON](t, rec).Code != "quote_mismatch" {
					t.Errorf("%s: the quote is not the same input's: %d %s", url, rec.Code, rec.Body)
				}
			}
			if held, _ := heldOf(t, s, "acct_all"); held != 0 {
				t.Errorf("held %d credits after refusals", held)
			}
			if jobs := decode[map[string]any](t, call(t, s, "GET", "/v1/jobs", "mg_test_all", nil)); jobs["total"] != float64(0) {
				t.Errorf("jobs = %v", jobs)
			}
			if hits.Load() != 0 {
				t.Errorf("the loopback server was sent %d requests", hits.Load())
			}
		})
	}
}

// TestInputsUploadExpiresInQueue: a queue longer than the upload's life fails the job as it
// starts, with input_expired, its hold refunded.
func TestInputsUploadExpiresInQueue(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"manual", "skip", "real"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := inputsServer(t, func(c *Config) { setClock(c, mode) })
			scenario := map[string]any{"scenario": map[string]any{"name": "slow-queue", "inputs": "fetch", "defaults": map[string]any{"queue": "2h", "queue_timeout": "3h"}}}
			if rec := call(t, s, "PUT", "/_emulator/scenario", "", scenario); rec.Code != 200 {
				t.Fatalf("scenario: %d %s", rec.Code, rec.Body)
			}
			up := decode[api.Upload](t, uploadRaw(t, s, pngOf(t, 64, 48), ""))
			in := i2iInput(up.URL)
			q := quote(t, s, "mg_test_all", i2i, in)
			_, before := heldOf(t, s, "acct_all")
			job := decode[api.Job](t, generate(t, s, "mg_test_all", "late", q, in, ""))
			if held, _ := heldOf(t, s, "acct_all"); held != q.Credits {
				t.Fatalf("held %d, want %d", held, q.Credits)
			}
			if mode != "skip" { // a real clock jumps as a manual one does
				call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "3h"})
			}
			job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "mg_test_all", nil))
			if job.Status != "failed" || job.Error == nil || job.Error.Code != "input_expired" || job.StartedAt != nil {
				t.Fatalf("job = %+v", job)
			}
			if held, available := heldOf(t, s, "acct_all"); held != 0 || available != before {
				t.Errorf("held %d, available %d; want 0 and %d (refunded)", held, available, before)
			}
		})
	}
}

// TestInputsDataURI: a data URI over the inline limit answers 422 input_too_large at its
// pointer; a PNG data URI under it works and sets the output size.
func TestInputsDataURI(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"manual", "skip", "real"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := inputsServer(t, func(c *Config) { setClock(c, mode) })
			big := "data:image/png;base64," + strings.Repeat("A", 800<<10)
			in := i2iInput(big)
			q := quote(t, s, "mg_test_all", i2i, in)
			rec := generate(t, s, "mg_test_all", "big", q, in, "")
			if rec.Code != 422 {
				t.Fatalf("big data URI: %d", rec.Code)
			}
			if p := decode[problemJSON](t, rec); p.Code != "input_too_large" || p.Errors[0].Pointer != "/input/image_url" {
				t.Fatalf("big data URI: %s", rec.Body)
			}
			small := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngOf(t, 320, 200))
			in = i2iInput(small)
			q = quote(t, s, "mg_test_all", i2i, in)
			job := decode[api.Job](t, generate(t, s, "mg_test_all", "small", q, in, ""))
			call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "10s"})
			job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "mg_test_all", nil))
			if job.Status != "succeeded" || job.Outputs[0].Width != 320 || job.Outputs[0].Height != 200 {
				t.Fatalf("job = %+v", job)
			}
			// Bytes that are no image fail the job as it starts, refunded.
			in = i2iInput("data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("not a png")))
			q = quote(t, s, "mg_test_all", i2i, in)
			job = decode[api.Job](t, generate(t, s, "mg_test_all", "junk", q, in, ""))
			call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "10s"})
			job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "mg_test_all", nil))
			if job.Status != "failed" || job.Error.Code != "input_undecodable" {
				t.Fatalf("junk job = %+v", job)
			}
		})
	}
}

// TestInputsMultipartAndAllowedHost: a multipart upload works as a raw one; a URL on an allowed
// host is fetched (once, when the generation arrives) and its size followed; a 404 there fails
// the job as it starts.
func TestInputsMultipartAndAllowedHost(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	img := pngOf(t, 96, 64)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/cat.png" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(img)
	}))
	t.Cleanup(files.Close)
	s := inputsServer(t, func(c *Config) { c.InputsAllow = []string{strings.TrimPrefix(files.URL, "http://")} })

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", "cat.png")
	_, _ = part.Write(img)
	_ = mw.Close()
	if rec := uploadRaw(t, s, body.Bytes(), mw.FormDataContentType()); rec.Code != 201 || decode[api.Upload](t, rec).Width != 96 {
		t.Fatalf("multipart upload: %d %s", rec.Code, rec.Body)
	}

	in := i2iInput(files.URL + "/cat.png")
	q := quote(t, s, "mg_test_all", i2i, in)
	job := decode[api.Job](t, generate(t, s, "mg_test_all", "allowed", q, in, ""))
	call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "10s"})
	job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "mg_test_all", nil))
	if job.Status != "succeeded" || job.Outputs[0].Width != 96 || job.Outputs[0].Height != 64 || hits.Load() != 1 {
		t.Fatalf("job = %+v, %d fetches", job, hits.Load())
	}
	in = i2iInput(files.URL + "/missing.png")
	q = quote(t, s, "mg_test_all", i2i, in)
	job = decode[api.Job](t, generate(t, s, "mg_test_all", "missing", q, in, ""))
	call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "10s"})
	job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "mg_test_all", nil))
	if job.Status != "failed" || job.Error.Code != "input_fetch_failed" {
		t.Fatalf("missing job = %+v", job)
	}
}

// TestInputsMaskMustMatch: an inpainting mask of another size than the image answers 422 at
// /input/mask_url, before anything is held.
func TestInputsMaskMustMatch(t *testing.T) {
	t.Parallel()
	s := inputsServer(t, nil)
	image := decode[api.Upload](t, uploadRaw(t, s, pngOf(t, 640, 480), "image/png"))
	mask := decode[api.Upload](t, uploadRaw(t, s, pngOf(t, 320, 240), "image/png"))
	const model = "fal-ai/flux-lora/inpainting"
	in := map[string]any{"image_url": image.URL, "mask_url": mask.URL, "prompt": "a green armchair"}
	q := quote(t, s, "mg_test_all", model, in)
	rec := generate(t, s, "mg_test_all", "mask", q, in, "")
	if p := decode[problemJSON](t, rec); rec.Code != 422 || p.Code != "invalid_input" || p.Errors[0].Pointer != "/input/mask_url" {
		t.Fatalf("mask: %d %s", rec.Code, rec.Body)
	}
	good := decode[api.Upload](t, uploadRaw(t, s, pngOf(t, 640, 480), "image/png"))
	in["mask_url"] = good.URL
	q = quote(t, s, "mg_test_all", model, in)
	if rec := generate(t, s, "mg_test_all", "mask-ok", q, in, ""); rec.Code != 202 {
		t.Fatalf("matching mask: %d %s", rec.Code, rec.Body)
	}
}

// TestInputsOffByDefault: without --inputs fetch, POST /v1/uploads answers as a path no route
// has, and a loopback image_url generates as before.
func TestInputsOffByDefault(t *testing.T) {
	t.Parallel()
	s := inputsServer(t, func(c *Config) { c.Inputs = "" })
	rec := uploadRaw(t, s, pngOf(t, 8, 8), "image/png")
	if rec.Code != 404 || decode[problemJSON](t, rec).Detail != "no endpoint at POST /v1/uploads" {
		t.Fatalf("upload while off: %d %s", rec.Code, rec.Body)
	}
	if rec := call(t, s, "GET", "/v1/uploads", "mg_test_all", nil); rec.Code != 404 {
		t.Errorf("GET /v1/uploads while off: %d", rec.Code)
	}
	on := inputsServer(t, nil)
	if rec := call(t, on, "GET", "/v1/uploads", "mg_test_all", nil); rec.Code != 405 || rec.Header().Get("Allow") != "POST" {
		t.Errorf("GET /v1/uploads while on: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	in := i2iInput("http://127.0.0.1:5173/cat.png")
	q := quote(t, s, "mg_test_all", i2i, in)
	if rec := generate(t, s, "mg_test_all", "off", q, in, ""); rec.Code != 202 {
		t.Fatalf("generate while off: %d %s", rec.Code, rec.Body)
	}
}

// TestInputsThroughSnapshot: a snapshot carries the uploads' bytes and the jobs' input expiry;
// restored, the upload's URL serves the same file, a new generation with it follows its size,
// the queued job still fails input_expired as it starts, and a succeeded job keeps its
// outputs' size.
func TestInputsThroughSnapshot(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"manual", "skip", "real"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := inputsServer(t, func(c *Config) { setClock(c, mode) })
			img := pngOf(t, 200, 100)
			up := decode[api.Upload](t, uploadRaw(t, s, img, "image/png"))
			in := i2iInput(up.URL)
			q := quote(t, s, "mg_test_all", i2i, in)
			done := decode[api.Job](t, generate(t, s, "mg_test_all", "done", q, in, ""))
			call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "10s"}) // a real clock jumps too
			done = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+done.ID, "mg_test_all", nil))
			if done.Status != "succeeded" || done.Outputs[0].Width != 200 {
				t.Fatalf("done = %+v", done)
			}
			scenario := map[string]any{"scenario": map[string]any{"name": "slow-queue", "inputs": "fetch", "defaults": map[string]any{"queue": "2h", "queue_timeout": "3h"}}}
			call(t, s, "PUT", "/_emulator/scenario", "", scenario)
			q = quote(t, s, "mg_test_all", i2i, in)
			late := decode[api.Job](t, generate(t, s, "mg_test_all", "late", q, in, ""))

			snap := call(t, s, "GET", "/_emulator/snapshot", "", nil)
			if snap.Code != 200 || !bytes.Contains(snap.Body.Bytes(), []byte(`"inputs_expire_at"`)) {
				t.Fatalf("snapshot: %d", snap.Code)
			}
			var doc api.Snapshot
			if err := json.Unmarshal(snap.Body.Bytes(), &doc); err != nil || len(doc.Uploads) != 1 || !bytes.Equal(doc.Uploads[0].Data, img) || doc.UploadsMade != 1 {
				t.Fatalf("snapshot uploads: %v, %d", err, len(doc.Uploads))
			}
			if rec := call(t, s, "POST", "/_emulator/reset", "", nil); rec.Code != 200 {
				t.Fatalf("reset: %d %s", rec.Code, rec.Body)
			}
			if got := call(t, s, "GET", strings.TrimPrefix(up.URL, "http://example.com"), "", nil); got.Code != 404 {
				t.Fatalf("the upload outlived a reset: %d", got.Code)
			}
			if rec := call(t, s, "PUT", "/_emulator/snapshot", "", snap.Body.String()); rec.Code != 200 {
				t.Fatalf("restore: %d %s", rec.Code, rec.Body)
			}
			if got := call(t, s, "GET", strings.TrimPrefix(up.URL, "http://example.com"), "", nil); got.Code != 200 || !bytes.Equal(got.Body.Bytes(), img) {
				t.Fatalf("GET upload after restore: %d", got.Code)
			}
			if again := decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+done.ID, "mg_test_all", nil)); again.Outputs[0].Width != 200 || again.Outputs[0].Height != 100 {
				t.Errorf("restored outputs %+v", again.Outputs)
			}
			if mode != "skip" {
				call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "3h"})
			}
			late = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+late.ID, "mg_test_all", nil))
			if late.Status != "failed" || late.Error.Code != "input_expired" {
				t.Fatalf("late after restore = %+v", late)
			}
			// The restored tenant goes on counting its uploads: a new one has a new id.
			if rec := uploadRaw(t, s, img, "image/png"); rec.Code == 201 && decode[api.Upload](t, rec).ID == up.ID {
				t.Errorf("a restored tenant named a new upload as an old one")
			}
		})
	}
}

// TestInputsReport: each input rule fires on a careless client (a loopback URL, an oversized
// data URI, an upload that expires in the queue, the same file uploaded for every job) and
// stays silent on a careful one (one upload, its url reused, generated right away).
func TestInputsReport(t *testing.T) {
	t.Parallel()
	counts := func(s *Server) map[string]int {
		rep := reportOf(t, s)
		return rep.Counts
	}
	img := pngOf(t, 80, 60)

	careful := inputsServer(t, nil)
	up := decode[api.Upload](t, uploadRaw(t, careful, img, "image/png"))
	for i, prompt := range []string{"in winter", "at night", "in the rain"} {
		in := map[string]any{"image_url": up.URL, "prompt": prompt}
		q := quote(t, careful, "mg_test_all", i2i, in)
		if rec := generate(t, careful, "mg_test_all", "careful-"+prompt, q, in, ""); rec.Code != 202 {
			t.Fatalf("careful generation %d: %d", i, rec.Code)
		}
	}
	call(t, careful, "POST", "/_emulator/clock", "", map[string]any{"advance": "10s"})
	for rule := range evidence.InputRules {
		if n := counts(careful)[rule]; n != 0 {
			t.Errorf("careful client: %s found %d times", rule, n)
		}
	}

	careless := inputsServer(t, nil)
	for i := range 3 { // the same file uploaded for every job
		u := decode[api.Upload](t, uploadRaw(t, careless, img, "image/png"))
		in := map[string]any{"image_url": u.URL, "prompt": "take " + strconv.Itoa(i)}
		q := quote(t, careless, "mg_test_all", i2i, in)
		generate(t, careless, "mg_test_all", "again-"+strconv.Itoa(i), q, in, "")
	}
	in := i2iInput("http://localhost:5173/cat.png")
	q := quote(t, careless, "mg_test_all", i2i, in)
	generate(t, careless, "mg_test_all", "local", q, in, "")
	in = i2iInput("data:image/png;base64," + strings.Repeat("A", 800<<10))
	q = quote(t, careless, "mg_test_all", i2i, in)
	generate(t, careless, "mg_test_all", "big", q, in, "")
	scenario := map[string]any{"scenario": map[string]any{"name": "slow-queue", "inputs": "fetch", "defaults": map[string]any{"queue": "2h", "queue_timeout": "3h"}}}
	call(t, careless, "PUT", "/_emulator/scenario", "", scenario)
	u := decode[api.Upload](t, uploadRaw(t, careless, pngOf(t, 10, 10), "image/png"))
	in = i2iInput(u.URL)
	q = quote(t, careless, "mg_test_all", i2i, in)
	job := decode[api.Job](t, generate(t, careless, "mg_test_all", "late", q, in, ""))
	call(t, careless, "POST", "/_emulator/clock", "", map[string]any{"advance": "3h"})
	call(t, careless, "GET", "/v1/jobs/"+job.ID, "mg_test_all", nil)
	got := counts(careless)
	for rule := range evidence.InputRules {
		if got[rule] != 1 {
			t.Errorf("careless client: %s found %d times, want once (counts %v)", rule, got[rule], got)
		}
	}
}

// TestUploadsBounded: a tenant holds at most sim.MaxUploads live uploads (503 with Retry-After
// past them, until the oldest expires), an upload over its kind's limit answers 413, a file of
// no media kind 415, and uploads count against the memory budget (503 memory_budget_exhausted).
func TestUploadsBounded(t *testing.T) {
	t.Parallel()
	s := inputsServer(t, nil)
	img := pngOf(t, 4, 4)
	for i := range sim.MaxUploads {
		if rec := uploadRaw(t, s, img, "image/png"); rec.Code != 201 {
			t.Fatalf("upload %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec := uploadRaw(t, s, img, "image/png")
	if rec.Code != 503 || decode[problemJSON](t, rec).Code != "service_unavailable" || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("upload past the bound: %d %s", rec.Code, rec.Body)
	}
	call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "61m"})
	if rec := uploadRaw(t, s, img, "image/png"); rec.Code != 201 {
		t.Fatalf("upload once the others expired: %d %s", rec.Code, rec.Body)
	}
	if rec := uploadRaw(t, s, []byte("plain words"), "text/plain"); rec.Code != 415 {
		t.Errorf("text upload: %d %s", rec.Code, rec.Body)
	}
	if rec := uploadRaw(t, s, nil, "image/png"); rec.Code != 422 {
		t.Errorf("empty upload: %d %s", rec.Code, rec.Body)
	}
	small := map[string]any{"scenario": map[string]any{"name": "small", "inputs": map[string]any{"limits": map[string]any{"image": map[string]any{"upload": 10}}}}}
	if rec := call(t, s, "PUT", "/_emulator/scenario", "", small); rec.Code != 200 {
		t.Fatalf("scenario: %d %s", rec.Code, rec.Body)
	}
	if rec := uploadRaw(t, s, img, "image/png"); rec.Code != 413 {
		t.Errorf("upload over the kind's limit: %d %s", rec.Code, rec.Body)
	}

	tight := inputsServer(t, func(c *Config) { c.MemoryBudget = 4 << 20 })
	big := make([]byte, 6<<20)
	copy(big, pngOf(t, 2, 2))
	if rec := uploadRaw(t, tight, big, "image/png"); rec.Code != 503 || decode[problemJSON](t, rec).Code != "memory_budget_exhausted" {
		t.Errorf("upload past the budget: %d %s", rec.Code, rec.Body)
	}
}

// TestInputsOtherTenantsUpload: an upload is its tenant's; another tenant's generation naming
// it fails as it starts, as a URL its own storage answers 404.
func TestInputsOtherTenantsUpload(t *testing.T) {
	t.Parallel()
	s := inputsServer(t, nil)
	req := httptest.NewRequest("POST", "/v1/uploads", bytes.NewReader(pngOf(t, 8, 8)))
	req.Header.Set("Authorization", "Bearer mg_test_all.alpha")
	req.Header.Set("Content-Type", "image/png")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 201 {
		t.Fatalf("upload in alpha: %d %s", rec.Code, rec.Body)
	}
	up := decode[api.Upload](t, rec)
	if !strings.Contains(up.URL, "/files/alpha/uploads/") {
		t.Fatalf("alpha's upload URL %s", up.URL)
	}
	in := i2iInput(up.URL)
	q := quote(t, s, "mg_test_all.beta", i2i, in)
	job := decode[api.Job](t, generate(t, s, "mg_test_all.beta", "other", q, in, ""))
	call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "10s"}, "X-Emulator-Tenant", "beta")
	job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "mg_test_all.beta", nil))
	if job.Status != "failed" || job.Error.Code != "input_fetch_failed" {
		t.Fatalf("beta's job = %+v", job)
	}
}
