package emulator

import (
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// ValidateFile checks one catalog file and returns its problems as "FILE:LINE: message" lines;
// none means the file is good.
func ValidateFile(path string) []string {
	name, data, err := readCatalog(path)
	if err != nil {
		return []string{err.Error()}
	}
	r := &catalog.Reporter{File: name}
	doc := catalog.ParseDocument(r, data)
	if doc != nil {
		if _, err := catalog.Parse(name, data); err != nil {
			return problemLines(err)
		}
		return nil
	}
	return problemLines(r.Problems)
}

func problemLines(err error) []string {
	ps, ok := err.(catalog.Problems)
	if !ok {
		return []string{err.Error()}
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
