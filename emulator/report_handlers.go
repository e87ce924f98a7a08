package emulator

import (
	"net/http"
	"strconv"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
)

// getReport judges the client's behaviour: GET /_emulator/report?scope=tenant|run, as JSON, or
// as markdown with format=markdown or Accept: text/markdown.
func (s *Server) getReport() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		scope, err := scopeOf(r)
		if err != nil {
			return err
		}
		markdown, err := wantsMarkdown(r)
		if err != nil {
			return err
		}
		var rep api.Report
		if scope == "run" {
			rep = s.tenants.Report()
		} else {
			n, findings := worldOf(r).Judge()
			rep = evidence.TenantReport(infoOf(r).tenant.Name(), n, findings)
		}
		if markdown {
			writeMarkdown(w, evidence.ReportMarkdown(rep))
			return nil
		}
		return s.writeJSON(w, http.StatusOK, rep)
	}
}

// writeMarkdown sends a document as text/markdown.
func writeMarkdown(w http.ResponseWriter, doc string) {
	h := w.Header()
	h.Set("Content-Type", "text/markdown; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(doc)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(doc))
}
