package emulator

import (
	"runtime/debug"
	"strings"
)

// modulePath is this module's path, as build information names it.
const modulePath = "github.com/mediagen/mediagen-emulator"

// A release build sets Version with -ldflags; any other build learns it here, once, from what
// the Go toolchain recorded, so X-Emulator-Version and `version` tell builds apart.
func init() {
	if Version == "" || Version == "dev" {
		if info, ok := debug.ReadBuildInfo(); ok {
			Version = versionFrom(info)
		}
	}
}

// versionFrom derives a version from build information, best first:
//
//   - the module's version when this module is a dependency (a test suite that imports
//     emulatortest at v1.2.3 reports 1.2.3), or the main module's version when the toolchain
//     knows one: a tagged checkout builds as v1.2.3, an untagged one as a pseudo-version,
//     `go install …@v1.2.3` as v1.2.3;
//   - "devel+REVISION" (the commit's first 12 hex digits, "-dirty" when the tree had changes)
//     from the version control stamp of this module's build without a module version;
//   - "dev" when neither is known (go test, or -buildvcs=false).
//
// The leading "v" is dropped, as release builds set Version without one.
func versionFrom(info *debug.BuildInfo) string {
	for _, dep := range info.Deps {
		if dep.Path == modulePath {
			if dep.Replace != nil {
				dep = dep.Replace
			}
			if v := usable(dep.Version); v != "" {
				return v
			}
		}
	}
	if info.Main.Path != modulePath {
		return "dev" // the version control stamp is of another module
	}
	if v := usable(info.Main.Version); v != "" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		return "devel+" + rev + "-dirty"
	}
	return "devel+" + rev
}

// usable returns a module version without its "v", or "" for none ("(devel)", empty).
func usable(v string) string {
	if v == "" || v == "(devel)" {
		return ""
	}
	return strings.TrimPrefix(v, "v")
}
