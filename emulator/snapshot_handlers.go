package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// snapshotReserve is the most set aside for a snapshot's body before it arrives, on the word of
// its Content-Length: enough for a tenant of 10,000 jobs in one allocation, instead of a copy
// at each doubling, and well below the route's bound.
const snapshotReserve = 16 << 20

// getSnapshot answers the tenant's whole world as one document; ?journal=true adds the journal.
func (s *Server) getSnapshot() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		withJournal, err := parseBool(r, "journal")
		if err != nil {
			return reply{}, err
		}
		doc := s.snapshotOf(infoOf(r).tenant, withJournal)
		return reply{status: http.StatusOK, body: doc}, nil
	}
}

// snapshotOf is a tenant's snapshot, named by this emulator.
func (s *Server) snapshotOf(t *sim.Tenant, withJournal bool) api.Snapshot {
	doc := t.World().Snapshot(withJournal)
	doc.Emulator, doc.Tenant = Version, t.Name()
	return doc
}

// putSnapshot replaces the tenant's world with the snapshot sent, at once, or changes nothing.
func (s *Server) putSnapshot() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		if err := jsonContent(r, "the snapshot"); err != nil {
			return reply{}, err
		}
		limit := s.cfg.MaxSnapshotBytes
		// The body's bytes are reserved while they are read, decoded and restored, so uploads
		// at once hold a bounded total.
		rr := &reservingReader{r: http.MaxBytesReader(w, r.Body, limit), g: s.uploads, announced: min(r.ContentLength, limit)}
		defer rr.release()
		body, err := readAll(rr, r.ContentLength, limit, snapshotReserve)
		if err != nil {
			if errors.Is(err, errUploadsFull) {
				return reply{}, s.uploads.full()
			}
			if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
				return reply{}, problem.New(problem.PayloadTooLarge, "the snapshot is over the limit of %d bytes for this route", limit)
			}
			return reply{}, problem.New(problem.InvalidJSON, "the body could not be read to its end")
		}
		doc, err := decodeSnapshot(body)
		if err != nil {
			return reply{}, err
		}
		t := infoOf(r).tenant
		world, err := t.Restore(doc)
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusOK, body: api.SnapshotResult{Status: "restored", Tenant: t.Name(), Now: timestamp(world.Now()),
			Jobs: world.Jobs(), Quotes: world.Quotes()}}, nil
	}
}

// decodeSnapshot reads a snapshot document strictly. A document that is not complete JSON, of
// a newer format, or with fields of the wrong type, unknown or given twice, is an
// invalid_snapshot problem with a JSON Pointer to where it goes wrong.
//
// It is read with github.com/go-json-experiment/json, not encoding/json: a snapshot of a busy
// tenant is megabytes, and that decoder reads it in one pass, about twice as fast, and says
// where each problem is as a JSON Pointer.
func decodeSnapshot(data []byte) (*api.Snapshot, error) {
	bad := func(ptr, msg string) error {
		return &problem.Error{Code: problem.InvalidSnapshot, Detail: "the snapshot does not hold at " + strconv.Quote(ptr) + ": " + msg + "; nothing was changed",
			Errors: []problem.FieldError{{Pointer: ptr, Message: msg}}}
	}
	// The document is read once, strictly; only when that fails is it looked at again, to tell
	// a newer format from a field gone wrong.
	var doc api.Snapshot
	err := jsonv2.Unmarshal(data, &doc, jsonv2.RejectUnknownMembers(true), snapshotUnmarshalers)
	var syntax *jsontext.SyntacticError
	switch {
	case err == nil:
	case errors.As(err, &syntax) && errors.Is(syntax.Err, jsontext.ErrDuplicateName):
		return nil, bad(string(syntax.JSONPointer), "given twice: the document was edited by hand")
	case errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF):
		where := ""
		if syntax != nil {
			where = fmt.Sprintf(" (at byte %d)", syntax.ByteOffset)
		}
		return nil, bad("", "not complete JSON"+where+": the document is truncated or was edited by hand")
	default:
		var probe struct {
			Format jsontext.Value `json:"format"`
		}
		if jsonv2.Unmarshal(data, &probe) != nil {
			return nil, bad("", "a snapshot is a JSON object")
		}
		doc.Format = 0
		_ = jsonv2.Unmarshal(probe.Format, &doc.Format)
	}
	if doc.Format < 1 {
		return nil, bad("/format", "format must be a positive integer (this emulator writes "+strconv.Itoa(api.SnapshotFormat)+")")
	}
	if doc.Format > api.SnapshotFormat {
		return nil, bad("/format", "format "+strconv.Itoa(doc.Format)+" is newer than this emulator reads ("+strconv.Itoa(api.SnapshotFormat)+"); restore it with a newer emulator")
	}
	if err != nil {
		ptr, msg := strictProblem(err)
		if msg == "unknown field" {
			msg += ": the document was edited, or written by another format"
		}
		return nil, bad(ptr, msg)
	}
	return &doc, nil
}

// snapshotUnmarshalers read a snapshot's values that encoding/json methods would otherwise
// read, each of which the decoder would hand over as a copy to be parsed again: of a busy
// tenant's snapshot there are tens of thousands.
var snapshotUnmarshalers = jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
	// The free-form values (the members of expected-error patterns) are read as encoding/json
	// does with UseNumber, so that no number loses digits and the patterns compare as they did.
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *any) error {
		raw, err := dec.ReadValue()
		if err != nil {
			return err
		}
		return jsonvalue.Decode(raw, v)
	}),
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *json.RawMessage) error {
		raw, err := dec.ReadValue()
		*v = append((*v)[:0], raw...)
		return err
	}),
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, d *api.Duration) error {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if tok.Kind() != '"' {
			return errors.New(`a duration is a string such as "250ms"`)
		}
		v, err := time.ParseDuration(tok.String())
		*d = api.Duration(v)
		return err
	}),
))

// Snapshot returns a tenant's snapshot document ("" names the default tenant), as GET
// /_emulator/snapshot answers it; --state-on-exit writes it.
func (s *Server) Snapshot(tenant string, withJournal bool) ([]byte, error) {
	<-s.ready
	if s.tenants == nil {
		return nil, errors.New("the catalog failed to load")
	}
	t, err := s.tenants.Get(tenant)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s.snapshotOf(t, withJournal))
}

// Restore replaces a tenant's world with a snapshot document ("" names the default tenant), as
// PUT /_emulator/snapshot does; --state loads it. A document that does not hold changes nothing
// and the error names every problem with its JSON Pointer.
func (s *Server) Restore(tenant string, data []byte) error {
	<-s.ready
	if s.tenants == nil {
		return errors.New("the catalog failed to load")
	}
	if int64(len(data)) > s.cfg.MaxSnapshotBytes {
		return fmt.Errorf("the snapshot is %d bytes, over the limit of %d", len(data), s.cfg.MaxSnapshotBytes)
	}
	t, err := s.tenants.Get(tenant)
	if err != nil {
		return err
	}
	doc, err := decodeSnapshot(data)
	if err == nil {
		_, err = t.Restore(doc)
	}
	if pe := problem.As(err); pe != nil && len(pe.Errors) > 1 {
		var b strings.Builder
		b.WriteString(pe.Detail)
		for _, e := range pe.Errors {
			b.WriteString("\n  " + e.Pointer + ": " + e.Message)
		}
		return errors.New(b.String())
	}
	if pe := problem.As(err); pe != nil {
		return errors.New(pe.Detail)
	}
	return err
}
