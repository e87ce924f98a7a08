package catalogtest

import (
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
)

// Input decodes a model's input the way the server does, numbers kept exact as json.Number; a
// src that is not one JSON object ends the test.
func Input[S ~string | ~[]byte](t testing.TB, src S) map[string]any {
	t.Helper()
	var input map[string]any
	if err := jsonvalue.Decode([]byte(src), &input); err != nil || input == nil {
		t.Fatalf("decode %.80s: not one JSON object: %v", src, err)
	}
	return input
}
