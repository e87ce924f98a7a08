package emulator

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonbody"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// members names the members of a body decodeInto checks beyond what their Go type can say.
type members struct {
	// required must be sent, and not as null: a Go zero value cannot tell 0 from left out.
	required []string
	// nonEmpty are strings that, when sent, must say something: an empty one or null is
	// refused at its pointer rather than read as left out, which would change what the request
	// asks (an "advance" of "" beside a "set").
	nonEmpty []string
}

// decodeInto reads a body that must be one JSON object, as every JSON route takes it (see
// readBody and jsonbody.Decode), into a wire type strictly: a member unknown, given twice or
// of the wrong type is an invalid_request problem with a JSON Pointer to it, as is a member m
// names that is left out or empty.
func (s *Server) decodeInto(w http.ResponseWriter, r *http.Request, v any, m members) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if err := strictly(body, v); err != nil || len(m.required)+len(m.nonEmpty) == 0 {
		return err
	}
	return jsonbody.Check(body, m.required, m.nonEmpty)
}

// request is a /v1 request body, an api request type: Validate lists the members it lacks.
type request interface{ Validate() []api.FieldError }

// decodeRequest reads a /v1 body into req in one strict pass, its input into *input with
// numbers exact, and then asks req what it lacks. It returns what was read, for the journal,
// even of a body refused.
func (s *Server) decodeRequest(w http.ResponseWriter, r *http.Request, req request, input *map[string]any) (map[string]any, []byte, error) {
	sent, err := s.readBody(w, r)
	if err == nil {
		err = readRequest(sent, req)
	}
	if err == nil {
		err = jsonbody.Problems(req.Validate())
	}
	if err != nil {
		return nil, sent, err
	}
	return *input, sent, nil
}

// strictly decodes a body as decodeInto does.
func strictly(body []byte, v any) error { return jsonbody.Decode(body, v, jsonbody.Control) }

// readBody reads a request's body as every JSON route takes it: a JSON content type (or none),
// at most the size limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := jsonContent(r, "the body"); err != nil {
		return nil, err
	}
	var body []byte
	if r.Body != nil {
		var err error
		body, err = readAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), r.ContentLength, s.cfg.MaxBodyBytes, 64<<10)
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return body, problem.New(problem.PayloadTooLarge, "the body is over the limit of %d bytes", s.cfg.MaxBodyBytes)
			}
			return body, problem.New(problem.InvalidJSON, "the body could not be read to its end")
		}
	}
	return body, nil
}

// jsonContent refuses a request whose body (what) is sent as other than JSON; none said is JSON.
func jsonContent(r *http.Request, what string) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return problem.New(problem.UnsupportedMediaType, "send %s as application/json, not %q", what, ct)
		}
	}
	return nil
}

// readAll reads a body to its end, into a buffer the size the request announced when it
// announced one, so a small body costs one small allocation. What is set aside before any byte
// arrives is at most reserve: an announcement is only a claim.
func readAll(r io.Reader, announced, limit, reserve int64) ([]byte, error) {
	size := int64(512)
	if announced >= 0 {
		size = min(announced, limit, reserve) + 1 // one more byte finds the end without growing
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow, as io.ReadAll does
		}
	}
}

// readRequest reads a body as decodeRequest does, without asking what it lacks.
func readRequest(body []byte, v any) error { return jsonbody.Decode(body, v, jsonbody.Request) }

// parseObject reads a body that must be one JSON object into a map, numbers exact, as a /v1
// request is read.
func parseObject(body []byte) (map[string]any, error) {
	var obj map[string]any
	err := readRequest(body, &obj)
	return obj, err
}
