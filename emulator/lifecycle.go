package emulator

import (
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// announce puts a deprecated model's Deprecation, Sunset and Link headers on the reply about
// it.
func (rep *reply) announce(r *http.Request, model string) {
	if world := worldOf(r); world != nil && model != "" {
		rep.deprecation(world.Phase(model))
	}
}

// deprecation puts the headers that announce a phase's deprecation on the reply.
func (rep *reply) deprecation(p scenario.Phase) {
	if p.Deprecated {
		if rep.header == nil {
			rep.header = make(http.Header, 3)
		}
		p.Headers(rep.header)
	}
}
