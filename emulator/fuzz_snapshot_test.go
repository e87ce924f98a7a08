package emulator

import (
	"bytes"
	"regexp"
	"testing"
)

// FuzzSnapshotRestore sends arbitrary documents to PUT /_emulator/snapshot, seeded with a busy
// tenant's snapshot and pieces of it, and checks that the answer is never a 5xx and that a
// refused document leaves the tenant as it was.
//
//	go test ./emulator -run '^$' -fuzz FuzzSnapshotRestore -fuzztime 1m
func FuzzSnapshotRestore(f *testing.F) {
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
	// The base is restored again only after a document was taken: a refused one is checked to
	// have changed nothing, so the tenant is still the base. That halves what an input costs.
	var before []byte
	f.Fuzz(func(t *testing.T, body []byte) {
		if before == nil {
			if rec := restore(t, s, "dst", base); rec.Code != 200 {
				t.Fatalf("restoring the base: %d %s", rec.Code, rec.Body)
			}
			before = requests.ReplaceAll(snapshotOf(t, s, "dst", "?journal=true"), nil)
		}
		rec := restore(t, s, "dst", body)
		switch {
		case rec.Code >= 500:
			t.Fatalf("a snapshot answered %d: %s", rec.Code, rec.Body)
		case rec.Code == 200:
			before = nil
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
