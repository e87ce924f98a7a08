package emulator

import (
	"net/http"
	"strconv"

	"github.com/mediagen/mediagen-emulator/docs"
)

// openAPIDocument serves the OpenAPI document of the whole emulator, byte for byte as it is
// kept in docs/openapi.json. It is documentation, like health: no key, no admin token, and on
// even when the control API is off.
func (s *Server) openAPIDocument() replyFunc {
	doc := []byte(docs.OpenAPI)
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		if r.Method == http.MethodHead {
			return reply{status: http.StatusOK, header: http.Header{"Content-Length": {strconv.Itoa(len(doc))}, "Content-Type": {"application/json"}}}, nil
		}
		return reply{status: http.StatusOK, raw: doc}, nil
	}
}
