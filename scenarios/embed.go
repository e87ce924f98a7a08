// Package scenarios holds the scenario files compiled into the emulator, each a condition a
// client's tests can put the service into by name.
package scenarios

import "embed"

// FS holds the embedded scenarios, one NAME.yaml each.
//
//go:embed *.yaml
var FS embed.FS
