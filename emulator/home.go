package emulator

import (
	"github.com/mediagen/mediagen-emulator/emulator/api"

	"bytes"
	"html/template"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// docsURL is where a person reads more: the repository's README.
const docsURL = "https://github.com/mediagen/mediagen-emulator#readme"

var homePage = template.Must(template.New("home").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mediagen-emulator {{.Version}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}code{font-size:.9em}</style>
</head>
<body>
<h1>mediagen-emulator</h1>
<p>An offline, deterministic emulator of the Media Generation Service. Version <code>{{.Version}}</code>.</p>
<ul>
{{range .Links}}<li><a href="{{.Href}}">{{.Title}}</a> <code>{{.Href}}</code>{{if .Note}} — {{.Note}}{{end}}</li>
{{end}}</ul>
<p>Read more in the <a href="{{.Docs}}">README</a>.</p>
</body>
</html>
`))

// home answers GET / for a person: a short HTML page of where things are, or the same as JSON
// when the client prefers application/json.
func (s *Server) home() replyFunc {
	keyNote := "needs an API key as Authorization: Bearer KEY"
	if _, ok := s.catalog.Key("mg_test_all"); ok {
		keyNote = "needs an API key: send Authorization: Bearer mg_test_all"
	}
	index := api.HomeIndex{Name: "mediagen-emulator", Version: Version, Docs: docsURL, Links: []api.HomeLink{
		{Rel: "api", Href: "/v1/models", Title: "The API: models", Note: keyNote},
		{Rel: "openapi", Href: "/_emulator/openapi.json", Title: "OpenAPI document"},
		{Rel: "control", Href: "/_emulator/health", Title: "Control API: health"},
		{Rel: "dashboard", Href: "/_emulator/ui/", Title: "Dashboard"},
	}}
	var page bytes.Buffer
	if err := homePage.Execute(&page, index); err != nil {
		panic(err) // the template and its data are fixed: a failure is a bug found by any test
	}
	html := page.Bytes()
	vary := http.Header{"Vary": {"Accept"}}
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		if prefersJSON(r.Header.Values("Accept")) {
			return reply{status: http.StatusOK, header: vary, body: index}, nil
		}
		return reply{status: http.StatusOK, header: vary, raw: html, contentType: "text/html; charset=utf-8"}, nil
	}
}

// prefersJSON reports whether an Accept header ranks application/json above text/html. Ties,
// wildcards alone and an absent header choose HTML.
func prefersJSON(accept []string) bool {
	q := acceptQ(accept, "application/json")
	return q > 0 && q > acceptQ(accept, "text/html")
}

// acceptQ is the quality an Accept header gives a media type named exactly, or -1 when it
// does not name it.
func acceptQ(accept []string, mediaType string) float64 {
	best := -1.0
	for _, line := range accept {
		for _, part := range strings.Split(line, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != mediaType {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
			best = max(best, q)
		}
	}
	return best
}
