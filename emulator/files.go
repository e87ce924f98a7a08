package emulator

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/download"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// serveFile serves an output without authentication, as the service's file URLs are: the job
// id in the path is the secret (and the tenant's name, for a tenant's files). Ranges, HEAD and
// conditional requests come from ServeContent.
func (s *Server) serveFile() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		vars := infoOf(r).vars
		if vars["job"] == sim.UploadsDir {
			return s.serveUpload(r, vars["name"])
		}
		world := worldOf(r)
		f, err := world.File(vars["job"], vars["name"])
		if err != nil {
			return reply{}, err
		}
		link, err := world.CheckLink(f, r.URL.Query(), r.Header.Get("Authorization") != "")
		if refused, ok := err.(*sim.LinkRefusal); ok {
			return linkRefused(r, refused, link), nil
		}
		rep := reply{facts: facts{link: link}, header: http.Header{"Content-Type": {f.Output.ContentType},
			"Etag":          {fmt.Sprintf(`"%016x-%d"`, f.Output.Seed, len(f.Data))},
			"Cache-Control": {"private, max-age=" + strconv.Itoa(int(f.ExpiresAt.Sub(f.Now).Seconds()))}}}
		rep.stream = func(w http.ResponseWriter) {
			if f.Download != nil && f.Download.Shapes() {
				// The scenario's shape for this model's files: slow, cut or mislabelled, ranges and all.
				shaped := download.New(w, r, *f.Download, s.sleep)
				s.serveContent(shaped, r, f.Finished, f.Data)
				shaped.Finish()
				return
			}
			s.serveContent(w, r, f.Finished, f.Data)
		}
		return rep, nil
	}
}

// linkRefused answers a refused link as the storage service behind real output links
// does, S3 here: an XML error body, not the API's problem JSON, which a client must not expect
// from a file URL.
func linkRefused(r *http.Request, e *sim.LinkRefusal, link sim.LinkFacts) reply {
	body := api.StorageError{Code: e.Code, Message: e.Message, RequestID: requestID(r)}
	if e.Expired {
		body.Expires, body.ServerTime = e.Expires.UTC().Format(time.RFC3339), e.Now.UTC().Format(time.RFC3339)
	}
	b, _ := xml.Marshal(body) // strings alone: it cannot fail
	return reply{status: e.Status, raw: append([]byte(xml.Header), b...), contentType: "application/xml", facts: facts{link: link}}
}

// serveContent serves bytes whose Content-Type and ETag are set, with the ranges, HEAD and
// conditional requests of http.ServeContent, and its plain-text errors answered as problems.
func (s *Server) serveContent(w http.ResponseWriter, r *http.Request, modified time.Time, data []byte) {
	// A range in a unit other than bytes is ignored, as RFC 9110 asks: the whole file follows.
	if rng := r.Header.Get("Range"); rng != "" && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(rng)), "bytes=") {
		r.Header.Del("Range")
	}
	http.ServeContent(&fileErrors{ResponseWriter: w, s: s, r: r}, r, "", modified, bytes.NewReader(data))
}

// fileErrors turns the errors http.ServeContent answers in plain text (an unsatisfiable range, a
// failed precondition) into the problem+json every other error is.
type fileErrors struct {
	http.ResponseWriter
	s       *Server
	r       *http.Request
	written bool // a problem went out; ServeContent's own text is dropped
}

// WriteHeader sends a problem in place of an error status.
func (fe *fileErrors) WriteHeader(status int) {
	var err error
	switch {
	case status == http.StatusRequestedRangeNotSatisfiable:
		err = problem.New(problem.RangeNotSatisfiable, "the range %q is not within the file's %s bytes", fe.r.Header.Get("Range"), strings.TrimPrefix(fe.Header().Get("Content-Range"), "bytes */"))
	case status == http.StatusPreconditionFailed:
		err = problem.New(problem.PreconditionFailed, "the file does not match If-Match or If-Unmodified-Since; its ETag is %s", fe.Header().Get("ETag"))
	case status >= 400:
		err = problem.New(problem.InvalidParameter, "the file cannot be served as asked: %s", http.StatusText(status))
	default:
		fe.ResponseWriter.WriteHeader(status)
		return
	}
	fe.written = true
	fe.Header().Del("X-Content-Type-Options")
	fe.s.answer(fe.ResponseWriter, fe.r, reply{}, err)
}

// Write drops ServeContent's plain-text error once a problem has gone out.
func (fe *fileErrors) Write(b []byte) (int, error) {
	if fe.written {
		return len(b), nil
	}
	return fe.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (fe *fileErrors) Unwrap() http.ResponseWriter { return fe.ResponseWriter }
