package emulatortest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// WithInputsFetched has media inputs judged by a hosted service's rules and read, as
// --inputs fetch does (docs/inputs.md): POST /v1/uploads answers, unreachable URLs are refused
// before anything is held, and image-to-image outputs follow their input's size.
func WithInputsFetched() Option {
	return func(s *settings) { s.cfg.Inputs = "fetch" }
}

// WithInputsAllow names the HOST[:PORT] inputs are really fetched from, as --inputs-allow does:
// a test's own file server (an httptest.Server's host, say).
func WithInputsAllow(hosts ...string) Option {
	return func(s *settings) { s.cfg.InputsAllow = append(s.cfg.InputsAllow, hosts...) }
}

// Upload sends a file to POST /v1/uploads in this handle's tenant, with the All key, and returns
// the upload: its URL goes in image_url (or any media input) until its ExpiresAt. data is the
// file's bytes, or the path of a file when it is a string; contentType may be "" to have the
// emulator read the type from the bytes. Inputs must be fetched (WithInputsFetched, or a
// scenario's inputs: fetch).
func (e *Emulator) Upload(t TB, file any, contentType string) api.Upload {
	t.Helper()
	var data []byte
	switch f := file.(type) {
	case []byte:
		data = f
	case string:
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("emulatortest: Upload: %v", err)
			return api.Upload{}
		}
		data = b
	default:
		t.Fatalf("emulatortest: Upload takes the file's bytes or its path, not %T", file)
		return api.Upload{}
	}
	req, err := http.NewRequest(http.MethodPost, e.URL+"/v1/uploads", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("emulatortest: Upload: %v", err)
		return api.Upload{}
	}
	key := e.Keys.All // a tenant's keys name it already
	if key == "" {
		key = e.Key(DefaultKeys.All)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("emulatortest: Upload: %v", err)
		return api.Upload{}
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("emulatortest: Upload: %s", describeRefusal(resp.StatusCode, http.StatusCreated, buf.Bytes()))
		return api.Upload{}
	}
	var up api.Upload
	if err := json.Unmarshal(buf.Bytes(), &up); err != nil {
		t.Fatalf("emulatortest: Upload: decoding %.200q: %v", buf.Bytes(), err)
	}
	return up
}

// Uploads lists this handle's tenant's live uploads, newest first (at most 500), each with the
// account that sent it, what it decoded to and the jobs that read it.
func (e *Emulator) Uploads(t TB) []api.ControlUpload {
	t.Helper()
	var page api.Page[api.ControlUpload]
	e.For(t).do(http.MethodGet, "/_emulator/uploads?limit=500", nil, http.StatusOK, &page)
	return page.Data
}

// MediaInputs are a job's media inputs as its generation found them (inputs fetched): how
// each was read (Source, Read) and what it decoded to; nil when inputs were not fetched.
func (e *Emulator) MediaInputs(t TB, jobID string) []api.MediaInput {
	t.Helper()
	var job api.ControlJob
	e.For(t).do(http.MethodGet, "/_emulator/jobs/"+url.PathEscape(jobID), nil, http.StatusOK, &job)
	return job.MediaInputs
}
