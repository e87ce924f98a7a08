package emulatortest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// SnapshotDirEnv names the environment variable that holds where failed tests' snapshots go.
// When it is set, Start and Tenant save the snapshot of every failed test's tenant there, so a
// CI job only sets it and keeps the folder as an artifact.
const SnapshotDirEnv = "MEDIAGEN_SNAPSHOT_DIR"

// Snapshot returns this handle's tenant's whole world as the emulator writes it (GET
// /_emulator/snapshot), with the request journal when journal is true. The bytes decode into
// an api.Snapshot; Restore, the emulator's --state flag or the dashboard put them back.
func (e *Emulator) Snapshot(t TB, journal bool) []byte {
	t.Helper()
	var doc json.RawMessage
	e.For(t).do(http.MethodGet, snapshotPath(journal), nil, http.StatusOK, &doc)
	return doc
}

// snapshotPath is the route that answers a snapshot, with or without the journal.
func snapshotPath(journal bool) string {
	if journal {
		return "/_emulator/snapshot?journal=true"
	}
	return "/_emulator/snapshot"
}

// Restore replaces this handle's tenant's world with the snapshot doc (PUT
// /_emulator/snapshot), at once: jobs go on as they would have, and the tenant's clock, credits,
// quotes, faults and scenario are the document's. A document the emulator refuses changes
// nothing and ends t, naming each problem with its JSON Pointer.
func (e *Emulator) Restore(t TB, doc []byte) api.SnapshotResult {
	t.Helper()
	var res api.SnapshotResult
	c := e.For(t)
	status, data, err := c.roundTrip(http.MethodPut, "/_emulator/snapshot", doc)
	switch {
	case err != nil:
		t.Fatalf("emulatortest: PUT /_emulator/snapshot: %v", err)
	case status != http.StatusOK:
		t.Fatalf("emulatortest: PUT /_emulator/snapshot: %s", describeRefusal(status, http.StatusOK, data))
	case json.Unmarshal(data, &res) != nil:
		t.Fatalf("emulatortest: PUT /_emulator/snapshot: decoding %.200q", data)
	}
	return res
}

// SnapshotOnFailure saves this handle's tenant's snapshot, journal included, to a new file in
// dir when t has failed, and logs the file's path, so the world that made the test fail can be
// restored and looked at later. An empty dir means $MEDIAGEN_SNAPSHOT_DIR, or else
// mediagen-snapshots in the system's temporary folder (not t.TempDir, which is removed when
// the test ends). The file is named after the test, with a random part so that no run
// overwrites another's.
//
// Call it after Tenant(t) (or Start), so that the snapshot is taken before the tenant goes.
// Tenant and Start do it themselves when MEDIAGEN_SNAPSHOT_DIR is set. t must be able to say
// whether it failed, as *testing.T does.
func (e *Emulator) SnapshotOnFailure(t TB, dir string) {
	t.Helper()
	failed, ok := t.(interface{ Failed() bool })
	if !ok {
		t.Fatalf("emulatortest: SnapshotOnFailure needs a test that can say it failed (a *testing.T), not %T", t)
		return
	}
	if dir == "" {
		dir = snapshotDir()
	}
	t.Cleanup(func() {
		if !failed.Failed() {
			return
		}
		path, err := e.saveSnapshot(t, dir)
		if err != nil {
			t.Logf("emulatortest: the failed test's snapshot could not be saved: %v", err)
			return
		}
		t.Logf("emulatortest: the failed test's tenant is saved in %s (restore it with Restore, --state or the dashboard's Open snapshot)", path)
	})
}

// snapshotOnFailureFromEnv registers SnapshotOnFailure when MEDIAGEN_SNAPSHOT_DIR is set and t
// can say whether it failed.
func (e *Emulator) snapshotOnFailureFromEnv(t TB) {
	dir := os.Getenv(SnapshotDirEnv)
	if _, ok := t.(interface{ Failed() bool }); ok && dir != "" {
		e.SnapshotOnFailure(t, dir)
	}
}

// snapshotDir is where snapshots go when no folder is named.
func snapshotDir() string {
	if dir := os.Getenv(SnapshotDirEnv); dir != "" {
		return dir
	}
	return filepath.Join(os.TempDir(), "mediagen-snapshots")
}

// saveSnapshot writes the tenant's snapshot to a new file in dir and returns its path. It
// reports errors rather than failing t, which has already failed.
func (e *Emulator) saveSnapshot(t TB, dir string) (string, error) {
	status, data, err := e.roundTrip(http.MethodGet, snapshotPath(true), nil)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("GET /_emulator/snapshot: %s", describeRefusal(status, http.StatusOK, data))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := "snapshot"
	if named, ok := t.(interface{ Name() string }); ok {
		name = safeName(named.Name())
	}
	if len(name) > 100 {
		name = name[:100]
	}
	f, err := os.CreateTemp(dir, name+"-*.json")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
