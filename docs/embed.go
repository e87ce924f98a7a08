// Package docs holds the documents the emulator publishes about itself.
package docs

import _ "embed"

// OpenAPI is the OpenAPI 3.1 description of everything the emulator answers (/v1, /files and
// /_emulator), served as is at GET /_emulator/openapi.json. The emulator's tests check every
// answer they get against it, so it cannot drift from what the emulator does.
//
//go:embed openapi.json
var OpenAPI string
