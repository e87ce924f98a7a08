package importer

// Limits the external tests check against.
const (
	MaxBackoff  = maxBackoff
	MaxAttempts = maxAttempts
)

// Filler is filler, for tests outside the package.
var Filler = filler
