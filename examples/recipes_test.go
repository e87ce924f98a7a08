// Package examples holds client test suites and recipes; its Go test checks that what the
// README, the guides and the helpers' READMEs show is what CI runs.
package examples

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const root = ".."

// readmes are the documents whose recipe blocks must be files that CI runs, besides the guides
// (docs/*.md).
var readmes = []string{"README.md", "clients/node/README.md", "clients/python/README.md"}

// shown are the recipe files a document must show whole: dropping one from every document, or
// editing it there only, fails the test.
var shown = []string{
	"examples/node-recipes/jest-esm/jest.config.mjs",
	"examples/node-recipes/jest-esm/global-setup.mjs",
	"examples/node-recipes/jest-esm/global-teardown.mjs",
	"examples/node-recipes/jest-esm/client.test.mjs",
	"examples/node-recipes/jest-ts/jest.config.js",
	"examples/node-recipes/jest-ts/tsconfig.json",
	"examples/node-recipes/jest-ts/global-setup.ts",
	"examples/node-recipes/jest-ts/global-teardown.ts",
	"examples/node-recipes/jest-ts/client.test.ts",
	"examples/node-recipes/vitest/vitest.config.mts",
	"examples/node-recipes/vitest/tsconfig.json",
	"examples/node-recipes/vitest/global-setup.ts",
	"examples/node-recipes/vitest/client.test.ts",
	"examples/node-recipes/node-test/client.test.mjs",
	"examples/pytest/run.sh",
	"examples/ci/github-actions.yml",
	"examples/compose/compose.yaml",
	"examples/testcontainers/python/test_testcontainers.py",
	"examples/testcontainers/node/testcontainers.test.mjs",
	"examples/testcontainers/go/emulator_test.go",
}

// block is a fenced code block that a document marks as a file's content with the comment
// <!-- file: PATH --> on the line before it.
type block struct {
	readme, path string
	line         int
	text         string
}

var marker = regexp.MustCompile(`^<!-- file: (\S+) -->$`)

// fileBlocks returns the marked blocks of a README text, and what is wrong with its markers:
// a marker not followed by a closed fenced block would otherwise check nothing.
func fileBlocks(readme, text string) (blocks []block, problems []string) {
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := marker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		b := block{readme: readme, path: m[1], line: i + 1}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			problems = append(problems, fmt.Sprintf("%s:%d: the file marker for %s is not followed by a fenced block", readme, b.line, b.path))
			continue
		}
		end := slices.Index(lines[i+2:], "```")
		if end < 0 {
			problems = append(problems, fmt.Sprintf("%s:%d: the block for %s is not closed", readme, b.line, b.path))
			continue
		}
		for _, l := range lines[i+2 : i+2+end] {
			b.text += l + "\n"
		}
		blocks = append(blocks, b)
		i += 2 + end
	}
	return blocks, problems
}

// TestReadmeBlocksAreFiles: every marked block equals its file, and every recipe file is shown.
func TestReadmeBlocksAreFiles(t *testing.T) {
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := slices.Clone(readmes)
	for _, g := range guides {
		rel, err := filepath.Rel(root, g)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, filepath.ToSlash(rel))
	}
	var seen []string
	for _, readme := range docs {
		text, err := os.ReadFile(filepath.Join(root, readme))
		if err != nil {
			t.Fatal(err)
		}
		blocks, problems := fileBlocks(readme, string(text))
		for _, p := range problems {
			t.Error(p)
		}
		for _, b := range blocks {
			want, err := os.ReadFile(filepath.Join(root, b.path))
			if err != nil {
				t.Errorf("%s:%d: %v", b.readme, b.line, err)
				continue
			}
			if b.text != string(want) {
				t.Errorf("%s:%d: the block differs from %s, which CI runs; copy the file into the document", b.readme, b.line, b.path)
			}
			seen = append(seen, b.path)
		}
	}
	for _, p := range shown {
		if !slices.Contains(seen, p) {
			t.Errorf("no document shows %s", p)
		}
	}
}

// TestFileBlocks pins the marker rules, including the ones that report a problem.
func TestFileBlocks(t *testing.T) {
	text := "<!-- file: x -->\nno block\n<!-- file: y -->\n```sh\necho y\n\n```\n<!-- file: z -->\n```\nnever closed\n"
	blocks, problems := fileBlocks("R", text)
	if len(blocks) != 1 || blocks[0].path != "y" || blocks[0].text != "echo y\n\n" || blocks[0].line != 3 {
		t.Errorf("blocks = %+v", blocks)
	}
	want := []string{
		"R:1: the file marker for x is not followed by a fenced block",
		"R:8: the block for z is not closed",
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems = %q, want %q", problems, want)
	}
}

// TestContainerRecipesAgree: the emulator and the tests beside it use the same admin token and
// reach the emulator where it listens (what can be checked without a Docker engine).
func TestContainerRecipesAgree(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Environment map[string]string `yaml:"environment"`
			DependsOn   map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
		} `yaml:"services"`
	}
	readYAML(t, "examples/compose/compose.yaml", &compose)
	emu, tests := compose.Services["mediagen"], compose.Services["tests"]
	if emu.Environment["MEDIAGEN_ADMIN_TOKEN"] == "" || emu.Environment["MEDIAGEN_ADMIN_TOKEN"] != tests.Environment["MEDIAGEN_ADMIN_TOKEN"] {
		t.Errorf("compose: admin tokens %q and %q", emu.Environment["MEDIAGEN_ADMIN_TOKEN"], tests.Environment["MEDIAGEN_ADMIN_TOKEN"])
	}
	if tests.Environment["MEDIAGEN_EMULATOR_URL"] != "http://mediagen:8080" || tests.DependsOn["mediagen"].Condition != "service_healthy" {
		t.Errorf("compose: the tests do not wait for and attach to the emulator: %+v", tests)
	}

	var workflow struct {
		Jobs map[string]struct {
			Env      map[string]string `yaml:"env"`
			Services map[string]struct {
				Image string            `yaml:"image"`
				Ports []string          `yaml:"ports"`
				Env   map[string]string `yaml:"env"`
			} `yaml:"services"`
		} `yaml:"jobs"`
	}
	readYAML(t, "examples/ci/github-actions.yml", &workflow)
	if len(workflow.Jobs) == 0 {
		t.Fatal("github-actions.yml: no jobs")
	}
	for name, job := range workflow.Jobs {
		svc, ok := job.Services["mediagen"]
		if !ok {
			t.Errorf("job %s: no mediagen service", name)
			continue
		}
		if svc.Env["MEDIAGEN_ADMIN_TOKEN"] == "" || svc.Env["MEDIAGEN_ADMIN_TOKEN"] != job.Env["MEDIAGEN_ADMIN_TOKEN"] {
			t.Errorf("job %s: admin tokens %q and %q", name, svc.Env["MEDIAGEN_ADMIN_TOKEN"], job.Env["MEDIAGEN_ADMIN_TOKEN"])
		}
		if !slices.Contains(svc.Ports, "8080:8080") || job.Env["MEDIAGEN_EMULATOR_URL"] != "http://127.0.0.1:8080" {
			t.Errorf("job %s: the tests do not reach the service: ports %v, URL %q", name, svc.Ports, job.Env["MEDIAGEN_EMULATOR_URL"])
		}
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := yaml.NewDecoder(f).Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
