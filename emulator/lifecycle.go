package emulator

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// announce puts a deprecated model's Deprecation, Sunset and Link headers on the reply about
// it, and returns its phase.
func (rep *reply) announce(r *http.Request, model string) scenario.Phase {
	world := worldOf(r)
	if world == nil || model == "" {
		return scenario.Phase{}
	}
	p := world.Phase(model)
	if p.Deprecated {
		if rep.header == nil {
			rep.header = make(http.Header, 3)
		}
		p.Headers(rep.header)
	}
	return p
}

// deprecatedRecord is a model's encoded record with the members that say it is deprecated,
// laid after the others; the record itself when the phase says nothing.
func deprecatedRecord(record []byte, p scenario.Phase) []byte {
	if !p.Deprecated {
		return record
	}
	trimmed := bytes.TrimRight(record, " \n")
	if len(trimmed) == 0 || trimmed[len(trimmed)-1] != '}' {
		return record
	}
	var b bytes.Buffer
	b.Grow(len(record) + 160)
	b.Write(trimmed[:len(trimmed)-1])
	member := func(name string, v any) {
		enc, _ := json.Marshal(v)
		b.WriteString(`,"` + name + `":`)
		b.Write(enc)
	}
	member("deprecated", true)
	member("deprecated_at", sim.Timestamp(p.DeprecatedAt))
	if !p.Sunset.IsZero() {
		member("sunset_at", sim.Timestamp(p.Sunset))
	}
	if p.Replacement != "" {
		member("replacement", p.Replacement)
	}
	b.WriteByte('}')
	b.Write(record[len(trimmed):])
	return b.Bytes()
}
