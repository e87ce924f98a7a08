package emulatortest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
)

func TestVerifyAndAssertRequested(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	c := newClient(t, emu, emu.Keys.All)
	c.generate(fox(), "key-1")
	c.generate(fox(), "key-2")

	v := emu.Verify(t, emulatortest.Pattern{Method: "POST", Path: "/v1/generate", Body: map[string]any{"input": fox()}})
	if v.Count != 2 || len(v.Matches) != 2 {
		t.Errorf("verify: %+v", v)
	}
	emu.AssertRequested(t, 1, emulatortest.Pattern{Path: "/v1/generate", Headers: map[string]string{"Idempotency-Key": "key-2"}})
	emu.AssertRequested(t, -1, emulatortest.Pattern{Path: "/v1/quotes", Pointers: map[string]any{"/input/prompt": fox()["prompt"]}})

	msg := fatal(func(tb *fakeTB) {
		emu.AssertRequested(tb, 1, emulatortest.Pattern{Path: "/v1/generate", Headers: map[string]string{"Idempotency-Key": "key-3"}})
	})
	for _, want := range []string{"0 request(s) match", "want 1", "the closest requests", "/headers/Idempotency-Key: want \"key-3\", got \"key-2\""} {
		if !strings.Contains(msg, want) {
			t.Errorf("AssertRequested's failure lacks %q:\n%s", want, msg)
		}
	}
	if msg := fatal(func(tb *fakeTB) { emu.AssertRequested(tb, 5, emulatortest.Pattern{Path: "/v1/generate"}) }); !strings.Contains(msg, "2 request(s) match") {
		t.Errorf("wrong count: %q", msg)
	}
	if msg := fatal(func(tb *fakeTB) { emu.Verify(tb, emulatortest.Pattern{Status: 42}) }); !strings.Contains(msg, "invalid_request") {
		t.Errorf("bad pattern: %q", msg)
	}
}

func TestExpectErrorAndAssertNoUnexpected(t *testing.T) {
	t.Parallel()
	shared := emulatortest.Start(t)
	emu := shared.Tenant(t)
	c := newClient(t, emu, emu.Keys.All)
	c.call(http.MethodGet, "/v1/jobs/no-such-job", nil)
	c.call(http.MethodPost, "/v1/quotes", map[string]any{"model": model, "input": map[string]any{}})

	msg := fatal(func(tb *fakeTB) { emu.AssertNoUnexpected(tb) })
	for _, want := range []string{"2 unexpected error answer(s)", "GET /v1/jobs/no-such-job → 404 job_not_found: no job", "POST /v1/quotes → 422 invalid_input", "sent: {", "answered: {"} {
		if !strings.Contains(msg, want) {
			t.Errorf("AssertNoUnexpected's failure lacks %q:\n%s", want, msg)
		}
	}
	emu.ExpectError(t, emulatortest.Pattern{Status: 404, Code: "job_not_found"})
	if u := emu.UnexpectedErrors(t); u.Total != 1 || u.Data[0].Entry.Code != "invalid_input" {
		t.Errorf("after one expectation: %+v", u)
	}
	emu.ExpectError(t, emulatortest.Pattern{Path: "/v1/quotes", Status: 422})
	emu.AssertNoUnexpected(t)
	// Another tenant's expectations and errors are its own.
	if u := shared.UnexpectedErrors(t); u.Total != 0 {
		t.Errorf("the default tenant sees %d unexpected errors", u.Total)
	}
}

func TestCoverageOfTenantAndRun(t *testing.T) {
	t.Parallel()
	shared := emulatortest.Start(t)
	t.Run("tenant", func(t *testing.T) {
		emu := shared.Tenant(t)
		c := newClient(t, emu, emu.Keys.All)
		id := c.generate(fox(), "k").str("id")
		emu.ForceFail(id, api.JobFailure{Code: "provider_error"})
		c.call(http.MethodGet, "/v1/jobs/none", nil)
		cov := emu.Coverage(t, "", "job *")
		if cov.Scope != "tenant" || cov.Tenant != emu.TenantName || cov.Exercised != 2 {
			t.Errorf("tenant coverage: %s %s %d", cov.Scope, cov.Tenant, cov.Exercised)
		}
		for _, id := range cov.RequiredMissing {
			if id == "job failed provider_error" || !strings.HasPrefix(id, "job ") {
				t.Errorf("required_missing holds %q", id)
			}
		}
		if md := emu.CoverageMarkdown(t, "", "job *"); !strings.Contains(md, "| `job failed provider_error` | jobs | 1 |") {
			t.Errorf("markdown:\n%s", md)
		}
	})
	// The subtest's tenant is gone; the run still counts what happened in it.
	cov := shared.Coverage(t, "run", "job failed provider_error")
	if cov.Scope != "run" || cov.Exercised != 2 || len(cov.RequiredMissing) != 0 {
		t.Errorf("run coverage after the tenant was dropped: %d exercised, missing %v", cov.Exercised, cov.RequiredMissing)
	}
	if short := emulatortest.ShortCoverage(cov); !strings.Contains(short, "emulator coverage (the whole run): 2 of ") || !strings.Contains(short, "jobs       1 of 8") {
		t.Errorf("short coverage:\n%s", short)
	}
}
