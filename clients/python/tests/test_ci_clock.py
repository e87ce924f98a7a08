"""The clock of a test's tenant on an emulator the helpers did not start: one in CI configured
with --clock manual, as the documented service containers, Compose file and Testcontainers
recipes run it. The fixture puts the tenant on the skip clock it has locally, unless the test
asks for another; and a wait=true that runs out of time on a manual clock says so."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

import mediagen_emulator
from _client import Client, image_model
from mediagen_emulator import URL_ENV, Emulator

INNER = '''
import json
import urllib.request

import pytest


def generate(mediagen, timeout=30):
    model = %(model)r
    headers = {"Authorization": "Bearer " + mediagen.api_key, "Content-Type": "application/json"}
    def post(path, body, **extra):
        req = urllib.request.Request(mediagen.base_url + path, json.dumps(body).encode(), {**headers, **extra}, method="POST")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.load(resp)
    _, quote = post("/v1/quotes", {"model": model, "input": {"prompt": "a red fox"}})
    return post("/v1/generate?wait=true", {"model": model, "input": {"prompt": "a red fox"}, "quote_id": quote["quote_id"]},
                **{"Idempotency-Key": "k1"})


def test_the_readme_flow_skips(mediagen):
    assert mediagen.control.clock()["mode"] == "skip"
    status, job = generate(mediagen)
    assert (status, job["status"]) == (200, "succeeded")


def test_a_reset_keeps_the_skip_clock(mediagen):
    mediagen.control.reset()
    assert mediagen.control.clock()["mode"] == "skip"


@pytest.mark.mediagen_clock("manual")
def test_asked_for_manual(mediagen):
    assert mediagen.control.clock()["mode"] == "manual"


@pytest.mark.mediagen_clock("manual")
def test_a_wait_that_runs_out(mediagen):
    status, job = generate(mediagen)
    assert (status, job["status"]) == (200, "succeeded")
'''


@pytest.fixture
def manual_server() -> Iterator[Emulator]:
    """An emulator configured as the CI recipes run it: a manual clock (and a short wait bound,
    so a wait=true runs out in a second rather than three minutes)."""
    with Emulator.start(clock="manual", args=["--max-wait", "1s"]) as emu:
        yield emu


@pytest.fixture
def run_attached(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, manual_server: Emulator):
    src = os.path.dirname(os.path.dirname(os.path.abspath(mediagen_emulator.__file__)))
    monkeypatch.setenv("PYTHONPATH", src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv(URL_ENV, manual_server.url)
    pytester.makepyfile(test_inner=INNER % {"model": image_model(manual_server.url)})

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess("-p", "mediagen_emulator.pytest_plugin", "-p", "no:cacheprovider", *args)

    return run


def test_an_attached_emulators_tenants_skip(run_attached, manual_server: Emulator):
    result = run_attached("-k", "not runs_out")
    result.assert_outcomes(passed=3)
    assert manual_server.control.clock()["mode"] == "manual", "the emulator's default tenant is left as configured"


def test_a_wait_that_runs_out_on_a_manual_clock_names_the_clock(run_attached):
    result = run_attached("-k", "runs_out")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "mediagen-emulator clock" in out
    assert "is on a manual clock" in out and "1 wait=true generation answered 202" in out
    assert 'control.advance("5m")' in out and '@pytest.mark.mediagen_clock("skip")' in out


def test_server_options_clock_applies_to_an_attached_emulators_tenants(run_attached, pytester: pytest.Pytester):
    pytester.makeconftest('''
import pytest

@pytest.fixture(scope="session")
def mediagen_server_options():
    return {"clock": "manual"}
''')
    pytester.makepyfile(test_options='''
def test_manual(mediagen):
    assert mediagen.control.clock()["mode"] == "manual"
''')
    run_attached("test_options.py").assert_outcomes(passed=1)


def test_clock_diagnosis(manual_server: Emulator):
    tenant = manual_server.new_tenant("diagnosis")
    try:
        c = tenant.control
        assert c.clock_diagnosis() is None  # nothing waited
        resp = Client(tenant).generate(image_model(tenant.base_url), {"prompt": "a red fox"}, "k1", wait=True)
        assert resp.status == 202
        text = c.clock_diagnosis()
        assert text is not None and "the tenant %s is on a manual clock" % tenant.name in text
        assert "1 wait=true generation answered 202, the job not finished (#2)" in text
        c.set_clock_mode("skip")
        assert c.clock_diagnosis() is None  # a skipping clock never leaves a wait waiting
    finally:
        tenant.delete()


def test_attach_puts_tenants_on_the_skip_clock_unless_told(manual_server: Emulator):
    assert Emulator.attach(manual_server.url).tenant_clock == "skip"
    assert Emulator.attach(manual_server.url, clock="manual").tenant_clock == "manual"
    assert Emulator.attach(manual_server.url, clock=None).tenant_clock is None
    assert manual_server.tenant_clock is None  # started here: its tenants have the clock it was started with
    attached = Emulator.attach(manual_server.url)
    plain, skips = attached.new_tenant("plain"), attached.new_tenant("skips", clock="skip")
    try:
        assert plain.control.clock()["mode"] == "manual"  # new_tenant alone changes nothing
        assert skips.control.clock()["mode"] == "skip"
        skips.control.reset()
        assert skips.control.clock()["mode"] == "skip"
        plain.control.reset()
        assert plain.control.clock()["mode"] == "manual"
    finally:
        plain.delete()
        skips.delete()
