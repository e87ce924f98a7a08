package emulatortest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
)

// failingTB is a test that can be made to have failed: its cleanups run on Close, and what it
// logs is kept.
type failingTB struct {
	emulatortest.Standalone
	name   string
	failed bool
	logs   []string
}

func (f *failingTB) Name() string { return f.name }
func (f *failingTB) Failed() bool { return f.failed }
func (f *failingTB) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("Fatalf: "+format, args...))
}
func (f *failingTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

// savedPath is the snapshot file a failingTB's log names.
func (f *failingTB) savedPath(t *testing.T) string {
	t.Helper()
	for _, l := range f.logs {
		if _, rest, ok := strings.Cut(l, "tenant is saved in "); ok {
			path, _, _ := strings.Cut(rest, " (")
			return path
		}
	}
	t.Fatalf("no snapshot path logged: %q", f.logs)
	return ""
}

// busyTenant makes a tenant with credits set, a fault, a job and a clock moved on.
func busyTenant(t *testing.T, emu *emulatortest.Emulator, tb emulatortest.TB) (*emulatortest.Emulator, string) {
	t.Helper()
	ten := emu.Tenant(tb)
	ten.SetCredits(emulatortest.DefaultAccounts.Poor, 4242)
	ten.AddFault(api.Perturbation{Match: api.FaultMatch{Path: "/v1/models"}, Status: 503, Count: 2})
	job := newClient(t, ten, ten.Keys.All).generate(fox(), "snap-key")
	if job.status != http.StatusAccepted {
		t.Fatalf("generate: %d %v", job.status, job.body)
	}
	ten.Advance(300 * time.Millisecond) // mid-way: the job has not ended
	return ten, job.str("id")
}

func TestSnapshotRestoresIntoAnotherTenant(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t, emulatortest.WithSeed(7))
	a, jobID := busyTenant(t, emu, t)
	doc := a.Snapshot(t, true)
	var snap api.Snapshot
	if err := json.Unmarshal(doc, &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Tenant != a.TenantName || len(snap.Jobs) != 1 || snap.Journal == nil || len(snap.Faults.Rules) != 1 {
		t.Fatalf("snapshot of %s: tenant %q, %d jobs, journal %v, faults %v", a.TenantName, snap.Tenant, len(snap.Jobs), snap.Journal != nil, snap.Faults.Rules)
	}
	var bare api.Snapshot
	if err := json.Unmarshal(a.Snapshot(t, false), &bare); err != nil || bare.Journal != nil || len(bare.Jobs) != 1 {
		t.Fatalf("without the journal: %v, journal %v", err, bare.Journal != nil)
	}

	b := emu.Tenant(t)
	res := b.Restore(t, doc)
	if res.Status != "restored" || res.Tenant != b.TenantName || res.Jobs != 1 {
		t.Errorf("Restore = %+v", res)
	}
	if got, want := b.Balance(emulatortest.DefaultAccounts.Poor), a.Balance(emulatortest.DefaultAccounts.Poor); got != want || got.Available != 4242 {
		t.Errorf("balance %+v, want %+v", got, want)
	}
	if !b.Now().Equal(a.Now()) {
		t.Errorf("clock %s, want %s", b.Now(), a.Now())
	}
	// The restored job goes on as the original does.
	a.Advance(time.Minute)
	b.Advance(time.Minute)
	if got, want := b.Job(jobID), a.Job(jobID); got.Status != want.Status || got.Status != "succeeded" {
		t.Errorf("restored job %s, original %s", got.Status, want.Status)
	}
}

func TestRestoreRefusedChangesNothingAndSaysWhere(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	ten, _ := busyTenant(t, emu, t)
	doc := ten.Snapshot(t, false)
	cases := []struct {
		name string
		doc  []byte
		want []string
	}{
		{"newer format", []byte(`{"format": 2}`), []string{"422 invalid_snapshot", "/format", "newer"}},
		{"truncated", doc[:len(doc)/2], []string{"422 invalid_snapshot", "not complete JSON"}},
		{"unknown model", []byte(strings.Replace(string(doc), `"model":"fal-ai/flux/dev"`, `"model":"acme/none"`, -1)), []string{"422 invalid_snapshot", "acme/none"}},
	}
	for _, c := range cases {
		got := fatal(func(tb *fakeTB) { ten.Restore(tb, c.doc) })
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: Fatalf(%q), want it to contain %q", c.name, got, w)
			}
		}
	}
	if b := ten.Balance(emulatortest.DefaultAccounts.Poor); b.Available != 4242 {
		t.Errorf("a refused restore changed the tenant: %+v", b)
	}
}

func TestSnapshotOnFailureSavesARestorableFile(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	dir := filepath.Join(t.TempDir(), "failures")

	passing := &failingTB{name: "TestPasses"}
	p, _ := busyTenant(t, emu, passing)
	p.SnapshotOnFailure(passing, dir)
	passing.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a passing test wrote to %s: %v", dir, err)
	}

	failing := &failingTB{name: "TestFails/case one"}
	f, jobID := busyTenant(t, emu, failing)
	f.SnapshotOnFailure(failing, dir)
	before := f.Job(jobID).Status
	failing.failed = true
	failing.Close() // the snapshot is saved, then the tenant deleted
	path := failing.savedPath(t)
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "TestFails_case_one-") || filepath.Ext(path) != ".json" {
		t.Errorf("saved as %s, want %s/TestFails_case_one-*.json", path, dir)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	later := emu.Tenant(t)
	if res := later.Restore(t, data); res.Jobs != 1 {
		t.Errorf("Restore = %+v", res)
	}
	if b := later.Balance(emulatortest.DefaultAccounts.Poor); b.Available != 4242 {
		t.Errorf("restored balance %+v", b)
	}
	if got := later.Job(jobID).Status; got != before {
		t.Errorf("restored job %s, want %s as it was when the test failed", got, before)
	}
	if len(later.Requests()) == 0 {
		t.Errorf("the saved snapshot has no journal")
	}

	// Only a test that can say it failed can save on failure.
	if got := fatal(func(tb *fakeTB) { emu.SnapshotOnFailure(tb, dir) }); !strings.Contains(got, "can say it failed") {
		t.Errorf("SnapshotOnFailure(Standalone): %q", got)
	}
}

// Not parallel: it sets the environment.
func TestSnapshotDirFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(emulatortest.SnapshotDirEnv, dir)
	emu := emulatortest.Start(t)

	// Tenant saves a failed test's tenant by itself, before deleting it.
	failing := &failingTB{name: "TestEnv"}
	ten, _ := busyTenant(t, emu, failing)
	failing.failed = true
	failing.Close()
	path := failing.savedPath(t)
	if filepath.Dir(path) != dir {
		t.Errorf("saved in %s, want %s", path, dir)
	}
	if body := get(t, emu, "/_emulator/tenants"); strings.Contains(body, ten.TenantName) {
		t.Errorf("tenant %s still listed after the test: %s", ten.TenantName, body)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var snap api.Snapshot
	if err := json.Unmarshal(data, &snap); err != nil || snap.Tenant != ten.TenantName || len(snap.Accounts) == 0 {
		t.Errorf("saved snapshot: %v, tenant %q", err, snap.Tenant)
	}
}

// get sends a GET to the emulator and returns the body of its 200 answer.
func get(t *testing.T, emu *emulatortest.Emulator, path string) string {
	t.Helper()
	resp, err := http.Get(emu.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return string(body)
}
