package emulator

import (
	"bytes"
	"flag"
	"regexp"
	"testing"
)

// FuzzSnapshotRestore sends arbitrary documents to PUT /_emulator/snapshot, seeded with a busy
// tenant's snapshot and pieces of it, and checks that the answer is never a 5xx and that a
// refused document leaves the tenant as it was.
//
//	go test ./emulator -run '^$' -fuzz FuzzSnapshotRestore -fuzztime 1m
func FuzzSnapshotRestore(f *testing.F) {
	boundMinimizing(f, snapshotMinimizeTime)
	// One emulator for all the inputs a fuzzing process runs, set up once.
	s := simServer(f, Config{Seeded: true, Seed: 5, MaxSnapshotBytes: 1 << 20})
	busyTenant(f, s, "src")
	doc := snapshotOf(f, s, "src", "")
	base := snapshotOf(f, s, "src", "?journal=true")
	for _, seed := range [][]byte{
		doc, base, doc[:len(doc)/3], []byte(`{"format":1}`), []byte(`{"format":2}`), []byte(`{"format":1,"clock":{"mode":"manual","now":"9999-12-31T23:59:59Z"}}`),
		bytes.Replace(doc, []byte(`"status":"running"`), []byte(`"status":"queued"`), 1),
		bytes.Replace(doc, []byte(`"held":`), []byte(`"held":1`), 1),
		bytes.Replace(doc, []byte(`"expected_errors":[`), []byte(`"expected_errors":[{"path":"/v1/**","pointers":{"/a/~2":1}},`), 1),
		bytes.Replace(doc, []byte(`"coverage":[`), []byte(`"coverage":[{"id":"x","group":"jobs","count":9e18},`), 1),
		bytes.ReplaceAll(doc, []byte(`"plan":`), []byte(`"slot":{"group":"g","limit":1},"plan":`)),
		bytes.ReplaceAll(doc, []byte(`"plan":`), []byte(`"slot":{"group":"g","limit":2,"admitted_at":"2026-01-01T00:00:00Z"},"plan":`)),
		bytes.Replace(doc, []byte(`"plan":`), []byte(`"slot":{"group":"","limit":0,"admitted_at":"x"},"plan":`), 1),
		[]byte(`[]`), []byte(`null`), []byte("\xef\xbb\xbf{}"), []byte(`{"format":1,"format":1}`),
	} {
		f.Add(seed)
	}
	requests := regexp.MustCompile(`"requests":[0-9]+`)
	// Every input starts from the base: one that is taken puts the base back before it
	// returns. So the coverage the fuzzer sees for an input, and looks for again when it
	// minimizes it, is the input's own, not partly the restore the input before it needed.
	if rec := restore(f, s, "dst", base); rec.Code != 200 {
		f.Fatalf("restoring the base: %d %s", rec.Code, rec.Body)
	}
	before := requests.ReplaceAll(snapshotOf(f, s, "dst", "?journal=true"), nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := restore(t, s, "dst", body)
		switch {
		case rec.Code >= 500:
			t.Fatalf("a snapshot answered %d: %s", rec.Code, rec.Body)
		case rec.Code == 200:
			if rec := restore(t, s, "dst", base); rec.Code != 200 {
				t.Fatalf("restoring the base after a taken snapshot: %d %s", rec.Code, rec.Body)
			}
			return
		case rec.Code != 413 && rec.Code != 415 && rec.Code != 422:
			t.Fatalf("a refused snapshot answered %d: %s", rec.Code, rec.Body)
		}
		// Only the request ids drawn for the requests moved on; the journal records no
		// control request.
		after := requests.ReplaceAll(snapshotOf(t, s, "dst", "?journal=true"), nil)
		if !bytes.Equal(before, after) {
			t.Fatalf("a refused snapshot (%d %s) changed the tenant: %s", rec.Code, rec.Body, firstDifference(string(before), string(after)))
		}
	})
}

// snapshotMinimizeTime bounds how long an input that widens coverage is minimized, unless
// -fuzzminimizetime says otherwise. This target's inputs are snapshots of kilobytes and each
// try a restore: go test's default of 60s per input is spent whole on every new one (its
// minimizer tries each byte, then each cut), so a run of minutes would do little but minimize.
// It is the bound scripts/fuzz-smoke gives every target.
const snapshotMinimizeTime = "100x"

// boundMinimizing sets -fuzzminimizetime to limit when fuzzing and the flag was not given.
func boundMinimizing(f *testing.F, limit string) {
	f.Helper()
	if fuzz := flag.Lookup("test.fuzz"); fuzz == nil || fuzz.Value.String() == "" {
		return
	}
	given := false
	flag.Visit(func(fl *flag.Flag) { given = given || fl.Name == "test.fuzzminimizetime" })
	if given {
		return
	}
	if err := flag.Set("test.fuzzminimizetime", limit); err != nil {
		f.Fatalf("-fuzzminimizetime %s: %v", limit, err)
	}
}
