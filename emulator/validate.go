package emulator

import (
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// ValidateFile checks one catalog or scenario file (told apart by their top-level fields) and
// returns its problems as "FILE:LINE: message" lines; none means the file is good.
func ValidateFile(path string) []string {
	if path == "" {
		return []string{"validate: empty file name"}
	}
	name, data, err := readCatalog(path)
	if err != nil {
		return []string{err.Error()}
	}
	r := &catalog.Reporter{File: name}
	doc := catalog.ParseDocument(r, data)
	if doc == nil {
		return problemLines(r.Problems)
	}
	if catalog.IsCatalog(doc) {
		_, err = catalog.Parse(name, data)
	} else {
		_, err = scenario.Parse(name, data)
	}
	if err != nil {
		return problemLines(err)
	}
	return nil
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
