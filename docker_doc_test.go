package main

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestOfflineImageRecipe runs docs/docker.md's offline image recipe (the block after
// <!-- offline-image -->), with a stand-in for podman that keeps what it was given: the one
// recipe of the guide builds the binary as the Dockerfile's build stage does (static, stripped,
// the version set), hands podman a context of exactly the binary and the passwd line, and
// leaves nothing behind, in the checkout or in the temporary folder.
func TestOfflineImageRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the recipe is a POSIX shell script")
	}
	doc, err := os.ReadFile("docs/docker.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(doc), "--target prebuilt "); n != 1 {
		t.Errorf("docs/docker.md has %d prebuilt recipes, want one", n)
	}
	m := regexp.MustCompile("(?s)<!-- offline-image -->\n```sh\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/docker.md has no ```sh block after <!-- offline-image -->")
	}
	recipe := string(m[1])

	// The Dockerfile's build: its ldflags, with the version the recipe sets.
	dockerfile, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ld := regexp.MustCompile(`-ldflags "([^"]*)\$\{VERSION\}"`).FindSubmatch(dockerfile)
	if ld == nil {
		t.Fatal("the Dockerfile's go build has no -ldflags \"...${VERSION}\"")
	}
	if want := `-ldflags "` + string(ld[1]) + `$version"`; !strings.Contains(recipe, want) {
		t.Errorf("the recipe does not build with the Dockerfile's flags %s:\n%s", want, recipe)
	}

	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	seen := filepath.Join(tmp, "seen")
	for _, d := range []string{bin, seen, filepath.Join(tmp, "tmp")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// podman: records its arguments and copies the build context (its last argument).
	stub := "#!/bin/sh\nprintf '%s\\n' \"$@\" >\"$SEEN/args\"\nfor a; do ctx=$a; done\ncp -R \"$ctx\" \"$SEEN/ctx\"\n"
	if err := os.WriteFile(filepath.Join(bin, "podman"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	before := gitStatus(t)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", recipe)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "SEEN="+seen, "TMPDIR="+filepath.Join(tmp, "tmp"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the recipe failed: %v\n%s", err, out)
	}

	args, err := os.ReadFile(filepath.Join(seen, "args"))
	if err != nil {
		t.Fatalf("the recipe did not run podman: %v", err)
	}
	for _, want := range []string{"--format\ndocker\n", "--target\nprebuilt\n", "--build-arg\nVERSION=0.1.0\n", "-f\nDockerfile\n"} {
		if !bytes.Contains(args, []byte(want)) {
			t.Errorf("podman was not given %q:\n%s", want, args)
		}
	}
	entries, err := os.ReadDir(filepath.Join(seen, "ctx"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "mediagen-emulator passwd" {
		t.Errorf("the build context holds %v, want the binary and passwd", names)
	}
	exe := filepath.Join(seen, "ctx", "mediagen-emulator")
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatalf("the binary is not a linux executable: %v", err)
	}
	if s := f.Section(".symtab"); s != nil {
		t.Error("the binary has a symbol table: not stripped (-s -w) as the Dockerfile's")
	}
	f.Close()
	if runtime.GOOS == "linux" {
		out, err := exec.Command(exe, "version").Output()
		if err != nil || strings.TrimSpace(string(out)) != "mediagen-emulator 0.1.0" {
			t.Errorf("the binary says %q (%v), want mediagen-emulator 0.1.0", out, err)
		}
	}
	if left, _ := os.ReadDir(filepath.Join(tmp, "tmp")); len(left) != 0 {
		t.Errorf("the recipe left %d entries in the temporary folder", len(left))
	}
	if after := gitStatus(t); after != before {
		t.Errorf("the recipe changed the checkout:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// gitStatus is the checkout's untracked and changed files, or "" outside a git checkout.
func gitStatus(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=all").Output()
	if err != nil {
		return ""
	}
	return string(out)
}
