package emulator

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// uploads answers /v1/uploads: POST keeps a file for use as a media input, answering 201 with
// its url and expires_at. The route is there only while inputs are fetched (--inputs fetch or a
// scenario's inputs: fetch); otherwise it answers exactly as a path no route has (other methods
// too: see the router's MethodNotAllowedHandler), so a client written to the contract without
// uploads sees no change.
func (s *Server) uploads() replyFunc {
	create := s.requireKey(catalog.PermGenerate, s.createUpload())
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		if !worldOf(r).FetchingNow() {
			return reply{}, problem.New(problem.NotFound, "no endpoint at %s %s", r.Method, r.URL.Path)
		}
		return create(w, r)
	}
}

// createUpload reads the file, as the raw body (its Content-Type the file's) or as the part
// named file of a multipart/form-data body, and keeps it in the tenant's world.
func (s *Server) createUpload() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		world := worldOf(r)
		if r.ContentLength > sim.MaxUploadSize {
			return reply{}, problem.New(problem.PayloadTooLarge, "the upload announces %d bytes; one upload is at most %d", r.ContentLength, sim.MaxUploadSize)
		}
		if r.ContentLength > 0 {
			if err := world.CanHold(r.ContentLength); err != nil {
				return reply{}, err
			}
		}
		// The body's bytes are reserved from the uploads gate while they are read, as a
		// snapshot's are, so uploads at once hold a bounded total, announced or chunked.
		rr := s.tenants.Uploads().Reader(http.MaxBytesReader(w, r.Body, sim.MaxUploadSize), min(r.ContentLength, sim.MaxUploadSize))
		defer rr.Release()
		if !rr.Reserve() {
			return reply{}, s.uploadsFull(w)
		}
		data, ctype, err := readUpload(rr, r.Header.Get("Content-Type"))
		if errors.Is(err, sim.ErrUploadsFull) {
			return reply{}, s.uploadsFull(w)
		}
		if err != nil {
			return reply{}, err
		}
		u, err := world.Upload(keyOf(r).Account, data, ctype)
		if err != nil {
			return reply{}, err
		}
		u.URL = baseURL(r) + u.URL
		rep := reply{status: http.StatusCreated, body: u, location: u.URL}
		rep.facts.inputDigest = world.UploadDigest(u.ID) // the report finds the same file uploaded again
		return rep, nil
	}
}

// readUpload reads an upload's bytes and their declared type, at most sim.MaxUploadSize.
func readUpload(body io.Reader, ctype string) ([]byte, string, error) {
	mt, params, _ := mime.ParseMediaType(ctype)
	var data []byte
	var err error
	if mt == "multipart/form-data" {
		data, ctype, err = filePart(body, params["boundary"])
	} else {
		data, err = io.ReadAll(body)
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, sim.ErrUploadsFull):
		return nil, "", err
	case errors.As(err, &tooLarge):
		return nil, "", problem.New(problem.PayloadTooLarge, "the upload is over %d bytes, the most one upload takes", sim.MaxUploadSize)
	case err != nil:
		var pe *problem.Error
		if errors.As(err, &pe) {
			return nil, "", pe
		}
		return nil, "", problem.New(problem.InvalidRequest, "the upload could not be read to its end")
	}
	return data, ctype, nil
}

// filePart reads the part named file of a multipart body (or, when none is so named, its
// first part with a file name), and the part's declared type.
func filePart(body io.Reader, boundary string) ([]byte, string, error) {
	if boundary == "" {
		return nil, "", problem.New(problem.InvalidRequest, "a multipart/form-data upload needs its boundary parameter")
	}
	mr := multipart.NewReader(body, boundary)
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return nil, "", problem.New(problem.InvalidRequest, "the multipart body has no part named file")
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) || errors.Is(err, sim.ErrUploadsFull) {
				return nil, "", err
			}
			return nil, "", problem.New(problem.InvalidRequest, "the multipart body does not parse")
		}
		if p.FormName() != "file" && p.FileName() == "" {
			_, _ = io.Copy(io.Discard, p)
			continue
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, "", err
		}
		return data, p.Header.Get("Content-Type"), nil
	}
}

// serveUpload serves an upload's bytes at its URL, without authentication as output files are:
// the id in the path is the secret.
func (s *Server) serveUpload(r *http.Request, id string) (reply, error) {
	f, err := worldOf(r).UploadFile(id)
	if err != nil {
		return reply{}, err
	}
	rep := reply{header: http.Header{"Content-Type": {f.ContentType},
		"Etag":          {fmt.Sprintf(`"%s"`, strings.TrimPrefix(f.Digest, "sha256:")[:32])},
		"Cache-Control": {"private, max-age=" + strconv.Itoa(max(0, int(f.ExpiresAt.Sub(f.Now).Seconds())))}}}
	rep.stream = func(w http.ResponseWriter) { s.serveContent(w, r, f.Created, f.Data) }
	return rep, nil
}
