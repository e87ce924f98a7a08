package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const root = "../.."

// TestCommittedFilesAreGenerated fails when the committed types differ from what the document
// generates: the document changed and nobody ran the generator, or a generated file was edited.
func TestCommittedFilesAreGenerated(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, docPath))
	if err != nil {
		t.Fatal(err)
	}
	py, ts, err := generate(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		want []byte
	}{{pythonPath, py}, {tsPath, ts}} {
		got, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s is not what %s generates; run: go run ./scripts/clienttypes", f.path, docPath)
		}
	}
}

// TestEveryPropertyDeclared reads the committed files the way a reader would, independently of
// the generator's output: every property of every object schema of the document must be
// declared in the Python TypedDict and the TypeScript interface of the same name.
func TestEveryPropertyDeclared(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, docPath))
	if err != nil {
		t.Fatal(err)
	}
	py, err := os.ReadFile(filepath.Join(root, pythonPath))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := os.ReadFile(filepath.Join(root, tsPath))
	if err != nil {
		t.Fatal(err)
	}
	missing, err := missingProperties(doc, string(py), string(ts))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Error(m)
	}
}

// TestMissingPropertyIsReported checks that the check above can fail: files generated from a
// document lack a property that a newer document adds.
func TestMissingPropertyIsReported(t *testing.T) {
	old := `{"components": {"schemas": {"JournalEntry": {"type": "object",
		"properties": {"seq": {"type": "integer"}, "code": {"type": "string"}}, "required": ["seq"]}}}}`
	py, ts, err := generate([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := missingProperties([]byte(old), string(py), string(ts)); err != nil || len(m) != 0 {
		t.Fatalf("files generated from the document itself: missing %v, %v", m, err)
	}
	newer := strings.Replace(old, `"code": {"type": "string"}`, `"code": {"type": "string"}, "tenant": {"type": "string"}`, 1)
	m, err := missingProperties([]byte(newer), string(py), string(ts))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"types.py: JournalEntry lacks tenant",
		"types.d.ts: JournalEntry lacks tenant",
	}
	if !slices.Equal(m, want) {
		t.Errorf("missing = %q, want %q", m, want)
	}
}

// missingProperties lists the properties of the document's object schemas that the Python or
// TypeScript text does not declare.
func missingProperties(doc []byte, py, ts string) ([]string, error) {
	schemas, err := readSchemas(doc)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, n := range schemas {
		if !isObject(n.Schema) {
			continue
		}
		pyBody := pyClassBody(py, "_"+n.Name+"Required") + pyClassBody(py, n.Name)
		tsBody := tsInterfaceBody(ts, n.Name)
		var pyMissing, tsMissing []string
		for _, p := range n.Schema.Properties {
			if !regexp.MustCompile(`(?m)^    ` + regexp.QuoteMeta(p.Name) + `: `).MatchString(pyBody) {
				pyMissing = append(pyMissing, fmt.Sprintf("types.py: %s lacks %s", n.Name, p.Name))
			}
			if !regexp.MustCompile(`(?m)^  "?` + regexp.QuoteMeta(p.Name) + `"?\??: `).MatchString(tsBody) {
				tsMissing = append(tsMissing, fmt.Sprintf("types.d.ts: %s lacks %s", n.Name, p.Name))
			}
		}
		missing = append(append(missing, pyMissing...), tsMissing...)
	}
	return missing, nil
}

// pyClassBody is the text of a top-level class, up to the next top-level statement.
func pyClassBody(py, name string) string {
	_, after, ok := strings.Cut(py, "\nclass "+name+"(")
	if !ok {
		return ""
	}
	if end := regexp.MustCompile(`\n[^\s#]`).FindStringIndex(after); end != nil {
		return after[:end[0]]
	}
	return after
}

// tsInterfaceBody is the text of an exported interface, up to its closing brace at column 0.
func tsInterfaceBody(ts, name string) string {
	_, after, ok := strings.Cut(ts, "\nexport interface "+name+" {\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(after, "\n}\n")
	return body
}

// TestRendering pins how the kinds of schema the document uses come out in each language.
func TestRendering(t *testing.T) {
	doc := `{"components": {"schemas": {
		"Thing": {"type": "object", "description": "A thing.", "properties": {
			"id": {"type": "string"},
			"n": {"type": ["integer", "null"]},
			"kind": {"type": "string", "enum": ["a", "b"]},
			"input": {"type": "object", "additionalProperties": true},
			"tags": {"type": "array", "items": {"type": "string"}},
			"other": {"anyOf": [{"$ref": "#/components/schemas/Other"}, {"type": "null"}]},
			"any": {"description": "Anything."}
		}, "required": ["id", "n"]},
		"Other": {"type": "object", "properties": {"x": {"type": "number"}}, "additionalProperties": true},
		"Change": {"oneOf": [{"type": "object", "properties": {"advance": {"type": "string"}}, "required": ["advance"]}, {"type": "object", "properties": {"set": {"type": "string"}}, "required": ["set"]}]}
	}}}`
	py, ts, err := generate([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"class _ThingRequired(TypedDict):\n",
		"    id: str\n    n: Optional[int]\n",
		"class Thing(_ThingRequired, total=False):\n    \"\"\"A thing.\"\"\"\n",
		"    kind: Literal[\"a\", \"b\"]\n    input: Dict[str, Any]\n    tags: List[str]\n    other: Optional[Other]\n",
		"    #: Anything.\n    any: Any\n",
		"class Other(TypedDict, total=False):\n",
		"Change = Dict[str, Any]\n",
	} {
		if !strings.Contains(string(py), want) {
			t.Errorf("types.py lacks %q:\n%s", want, py)
		}
	}
	for _, want := range []string{
		"export interface Thing {\n  id: string;\n  n: number | null;\n  kind?: \"a\" | \"b\";\n  input?: Record<string, unknown>;\n  tags?: string[];\n  other?: Other | null;\n",
		"  /** Anything. */\n  any?: unknown;\n}\n",
		"export interface Other {\n  x?: number;\n  [property: string]: unknown;\n}\n",
		"export type Change = {\n  advance: string;\n} | {\n  set: string;\n};\n",
	} {
		if !strings.Contains(string(ts), want) {
			t.Errorf("types.d.ts lacks %q:\n%s", want, ts)
		}
	}
}

// TestBadDocuments: a document the generator cannot read is an error, never a file.
func TestBadDocuments(t *testing.T) {
	for _, doc := range []string{
		``,
		`[]`,
		`{"components": {}}`,
		`{"components": {"schemas": []}}`,
		`{"components": {"schemas": {"X": {"type": 3}}}}`,
		`{"components": {"schemas": {"X": {"type": "object", "properties": {"from": {"type": "string"}}}}}}`,
	} {
		if _, _, err := generate([]byte(doc)); err == nil {
			t.Errorf("generate(%q): no error", doc)
		}
	}
}
