package emulator

import (
	"runtime/debug"
	"testing"
)

func TestVersionFrom(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "08f874824d01aa0000000000000000000000abcd"
	tests := []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"tagged checkout", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}, Settings: vcs(rev, "false")}, "1.2.3"},
		{"untagged checkout", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.0.0-20260101000000-08f874824d01+dirty"}}, "0.0.0-20260101000000-08f874824d01+dirty"},
		{"dependency of a test suite", debug.BuildInfo{Main: debug.Module{Path: "example.com/client", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "example.com/other", Version: "v9.0.0"}, {Path: modulePath, Version: "v0.4.0"}}}, "0.4.0"},
		{"replaced dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/client"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.4.0", Replace: &debug.Module{Path: "../emu", Version: ""}}}}, "dev"},
		{"vcs stamp only", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: vcs(rev, "false")}, "devel+08f874824d01"},
		{"vcs stamp, changed tree", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: vcs(rev, "true")}, "devel+08f874824d01-dirty"},
		{"short revision", debug.BuildInfo{Main: debug.Module{Path: modulePath}, Settings: vcs("abc", "false")}, "devel+abc"},
		{"nothing known", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "dev"},
		{"another main module", debug.BuildInfo{Main: debug.Module{Path: "example.com/x", Version: "v3.0.0"}, Settings: vcs(rev, "false")}, "dev"},
	}
	for _, tc := range tests {
		if got := versionFrom(&tc.info); got != tc.want {
			t.Errorf("%s: versionFrom = %q, want %q", tc.name, got, tc.want)
		}
	}
}
