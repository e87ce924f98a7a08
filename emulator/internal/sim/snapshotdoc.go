package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonbody"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// DecodeSnapshot reads a snapshot document strictly, as the emulator wrote it. A document that is not complete JSON, of
// a newer format, or with fields of the wrong type, unknown or given twice, is an
// invalid_snapshot problem with a JSON Pointer to where it goes wrong.
//
// It is read with github.com/go-json-experiment/json, not encoding/json: a snapshot of a busy
// tenant is megabytes, and that decoder reads it in one pass, about twice as fast, and says
// where each problem is as a JSON Pointer.
func DecodeSnapshot(data []byte) (*api.Snapshot, error) {
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
		ptr, msg := jsonbody.Problem(err)
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
