// Package ui holds the dashboard: plain HTML, CSS and JavaScript, embedded in the binary and
// served at /_emulator/ui/. It needs no build step and loads nothing from elsewhere, so it
// works offline; everything it shows comes from the control API.
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"path"
	"sync"
)

//go:embed static
var static embed.FS

// Files are the dashboard's files by name: index.html, app.js, app.css.
var Files, _ = fs.Sub(static, "static")

// Served is one of the dashboard's files, ready to serve.
type Served struct {
	Data        []byte
	ContentType string
	ETag        string
}

// served loads the embedded dashboard once.
var served = sync.OnceValue(func() map[string]Served {
	out := map[string]Served{}
	_ = fs.WalkDir(Files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(Files, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[name] = Served{Data: data, ContentType: contentType(name), ETag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	return out
})

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// Policy is the page's Content-Security-Policy: it keeps the page to its own files and the emulator's own answers (output media are
// served from the same address).
const Policy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// File is the dashboard's file of a name ("index.html", "app.js"), or false.
func File(name string) (Served, bool) {
	f, ok := served()[name]
	return f, ok
}
