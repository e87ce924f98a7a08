package emulator

import (
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
)

// getReport judges the client's behaviour: GET /_emulator/report?scope=tenant|run, as JSON, or
// as markdown with format=markdown or Accept: text/markdown.
func (s *Server) getReport() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		scope, err := scopeOf(r)
		if err != nil {
			return reply{}, err
		}
		asMarkdown, err := wantsMarkdown(r)
		if err != nil {
			return reply{}, err
		}
		var rep api.Report
		if scope == "run" {
			rep = s.tenants.Report()
		} else {
			n, findings := worldOf(r).Judge()
			rep = evidence.TenantReport(infoOf(r).tenant.Name(), n, findings)
		}
		if asMarkdown {
			return markdown(evidence.ReportMarkdown(rep)), nil
		}
		return reply{status: http.StatusOK, body: rep}, nil
	}
}

// markdown answers a document as text/markdown.
func markdown(doc string) reply {
	return reply{status: http.StatusOK, raw: []byte(doc), contentType: "text/markdown; charset=utf-8"}
}
