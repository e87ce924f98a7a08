package catalog

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Problem is one thing wrong with a configuration file, located by line.
type Problem struct {
	File    string
	Line    int
	Message string
}

// String formats the problem as FILE:LINE: message.
func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Message)
}

// Problems is every problem found in one or more files; loading reports all of them at once.
type Problems []Problem

// Error lists the problems one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Sorted returns the problems ordered by file and line, so output reads top to bottom.
func (ps Problems) Sorted() Problems {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return out
}

// Reporter collects problems for one file.
type Reporter struct {
	File     string
	Problems Problems
}

// At records a problem at a line.
func (r *Reporter) At(line int, format string, args ...any) {
	r.Problems = append(r.Problems, Problem{File: r.File, Line: line, Message: fmt.Sprintf(format, args...)})
}

// Node records a problem at a YAML node's line.
func (r *Reporter) Node(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	r.At(line, format, args...)
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// YAMLError records an error from yaml.v3, keeping the line it names.
func (r *Reporter) YAMLError(err error) {
	var msgs []string
	if te, ok := err.(*yaml.TypeError); ok {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	for _, m := range msgs {
		if sub := yamlLine.FindStringSubmatch(m); sub != nil {
			line, _ := strconv.Atoi(sub[1])
			if offByOne(sub[2]) {
				line++
			}
			r.At(line, "%s", cleanYAMLMessage(sub[2]))
			continue
		}
		r.At(0, "%s", cleanYAMLMessage(strings.TrimPrefix(m, "yaml: ")))
	}
}

// offByOne reports the yaml.v3 syntax errors whose line is the one before the construct they
// are about (the parser's errors count lines from zero, unlike the scanner's).
func offByOne(msg string) bool {
	return strings.HasPrefix(msg, "did not find expected") || strings.HasPrefix(msg, "found a tab character that violates indentation")
}

// cleanYAMLMessage hides Go type names that yaml.v3 puts into its messages.
func cleanYAMLMessage(m string) string {
	m = strings.ReplaceAll(m, "!!", "")
	for goType, word := range map[string]string{
		"time.Duration": "a duration such as 500ms or 2s", "float64": "a number", "int64": "an integer",
		"int": "an integer", "string": "a string", "bool": "true or false",
	} {
		if strings.HasSuffix(m, " into "+goType) {
			return strings.TrimSuffix(m, goType) + word
		}
	}
	if i := strings.Index(m, " into "); i >= 0 && strings.Contains(m[i:], ".") {
		return m[:i] + " here"
	}
	return m
}
