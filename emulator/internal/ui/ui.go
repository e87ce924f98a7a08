// Package ui holds the dashboard: plain HTML, CSS and JavaScript, embedded in the binary and
// served at /_emulator/ui/. It needs no build step and loads nothing from elsewhere, so it
// works offline; everything it shows comes from the control API.
package ui

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// Files are the dashboard's files by name: index.html, app.js, app.css.
var Files, _ = fs.Sub(static, "static")
