package cli

import (
	"fmt"
	"io"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// Validate runs the validate command over files and returns the process exit status: 0 every
// file is good, 1 one has problems (each printed as "FILE:LINE: message"), 2 no file was named.
func Validate(files []string, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		fmt.Fprintln(stderr, "usage: mediagen-emulator validate FILE...")
		return 2
	}
	status := 0
	for _, f := range files {
		problems := ValidateFile(f)
		for _, p := range problems {
			fmt.Fprintln(stdout, p)
		}
		if len(problems) > 0 {
			status = 1
		} else {
			fmt.Fprintf(stdout, "%s: ok\n", f)
		}
	}
	return status
}

// ValidateFile checks one catalog or scenario file (told apart by their top-level fields) and
// returns its problems as "FILE:LINE: message" lines; none means the file is good.
func ValidateFile(path string) []string {
	if path == "" {
		return []string{"validate: empty file name"}
	}
	name, data, err := emulator.ReadCatalog(path)
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

// problemLines is each of a file's problems on a line of its own.
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
