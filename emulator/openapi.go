package emulator

import (
	"net/http"
	"strconv"

	"github.com/mediagen/mediagen-emulator/docs"
)

// openAPIDocument serves the OpenAPI document of the whole emulator, byte for byte as it is
// kept in docs/openapi.json. It is documentation, like health: no key, no admin token, and on
// even when the control API is off.
func (s *Server) openAPIDocument() handlerFunc {
	doc := []byte(docs.OpenAPI)
	length := strconv.Itoa(len(doc))
	return func(w http.ResponseWriter, r *http.Request) error {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", length)
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(doc)
		}
		return nil
	}
}
