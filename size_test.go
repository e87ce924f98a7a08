package main

import "testing"

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"2GiB": 2 << 30, "512MiB": 512 << 20, "1048576": 1 << 20, " 3 GiB ": 3 << 30, "4096KiB": 4 << 20, "1TiB": 1 << 40, "2097152B": 2 << 20} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1GiB", "1.5GiB", "2GB", "1KiB", "99999999999TiB", "GiB", "lots"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// TestFormatSize: a size is written in the largest unit that divides it, and reads back as
// itself, so a flag's default shown from a number of bytes is one the flag takes.
func TestFormatSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{1 << 30: "1GiB", 3 << 20: "3MiB", 1536 << 20: "1536MiB", 5 << 40: "5TiB", 1<<20 + 1: "1048577B"} {
		got := formatSize(n)
		if got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := parseSize(got); err != nil || back != n {
			t.Errorf("parseSize(formatSize(%d)) = %d, %v", n, back, err)
		}
	}
}
