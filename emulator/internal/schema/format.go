package schema

import "github.com/santhosh-tekuri/jsonschema/v5"

// formats are the format checks the emulator's compilers use in place of the library's. They
// are given to each compiler, never added to the library's process-wide table.
var formats = map[string]func(any) bool{}

// formatCheck is the function a compiler from NewCompiler checks a format with, as the library
// picks it: the compiler's own, else the library's table; nil when the format is not checked.
func formatCheck(name string) func(any) bool {
	if fn, ok := formats[name]; ok {
		return fn
	}
	return jsonschema.Formats[name]
}
