"""--mediagen-explore and --mediagen-plan, run the way a user runs them: pytest in a subprocess,
on a careful client and on one that retries a lost generation with a fresh Idempotency-Key (the
two example clients of examples/explore)."""

from __future__ import annotations

import json
import os

import pytest

import mediagen_emulator
from mediagen_emulator import KEY_ENV, TENANT_ENV, URL_ENV, Emulator, find_binary

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples", "explore")

INNER = '''
import sys
import pytest

sys.path.insert(0, %(examples)r)
import buggy_client
import careful_client

RUNS = %(runs)r


@pytest.fixture
def render(mediagen, tmp_path):
    """A fixture built on mediagen: made again for each run, in that run's tenant."""
    with open(RUNS, "a") as f:
        f.write(mediagen.name + "\\n")

    def go(client_class):
        client = client_class(mediagen.base_url, mediagen.api_key, log=lambda msg: None)
        return client.render("fal-ai/flux/schnell", {"prompt": "a red fox"}, str(tmp_path))
    return go


@pytest.mark.mediagen_explore
def test_careful(render):
    assert len(render(careful_client.Client)) == 1


@pytest.mark.mediagen_explore
def test_buggy(render):
    assert len(render(buggy_client.BuggyClient)) == 1


def test_unmarked(mediagen):
    with open(RUNS, "a") as f:
        f.write("unmarked " + mediagen.name + "\\n")
'''


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mediagen_server: Emulator):
    """Writes the inner tests; returns run(*args) -> (result, the tenants each run used)."""
    if not os.path.exists(os.path.join(EXAMPLES, "careful_client.py")):
        pytest.skip("examples/explore is not beside this package (an installed copy)")
    runs = pytester.path / "runs.txt"
    pytester.makepyfile(test_inner=INNER % {"examples": os.path.abspath(EXAMPLES), "runs": str(runs)})
    src = os.path.dirname(os.path.dirname(os.path.abspath(mediagen_emulator.__file__)))
    monkeypatch.setenv("PYTHONPATH", src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("MEDIAGEN_EMULATOR_BIN", mediagen_server.process.args[0] if mediagen_server.process else find_binary())
    for name in (URL_ENV, KEY_ENV, TENANT_ENV):
        monkeypatch.delenv(name, raising=False)

    def run(*args: str):
        result = pytester.runpytest_subprocess("-p", "mediagen_emulator.pytest_plugin", "-p", "no:cacheprovider", *args)
        lines = runs.read_text().splitlines() if runs.exists() else []
        runs.unlink(missing_ok=True)
        return result, lines

    return run


def test_without_options_a_marked_test_runs_once(inner):
    result, tenants = inner("-k", "careful or unmarked")
    result.assert_outcomes(passed=2)
    assert len(tenants) == 2


def test_the_careful_client_passes_every_run(inner):
    result, tenants = inner("--mediagen-explore=12", "--mediagen-explore-seed=7", "-k", "careful or unmarked", "-rA")
    result.assert_outcomes(passed=2)  # one report for the explored test, however many runs
    explored = [t for t in tenants if not t.startswith("unmarked")]
    assert len(explored) == 12 and len(set(explored)) == 12, "a fresh tenant, and a fresh fixture, for each run"
    assert [t for t in tenants if t.startswith("unmarked")] and len(tenants) == 13, "an unmarked test runs once"
    result.stdout.fnmatch_lines(["*12 runs under plans drawn from seed 7: none failed*"])


def test_the_buggy_client_is_found_shrunk_and_bundled_and_the_bundle_replays(inner, pytester: pytest.Pytester):
    out = pytester.path / "bundles"
    result, tenants = inner("--mediagen-explore=30", "--mediagen-explore-seed=7", "--mediagen-explore-out", str(out), "-k", "buggy")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "mediagen-emulator explore: run " in text and "(seed 7) failed" in text
    assert "new-key-on-retry" in text and "POST /v1/generate" in text
    path = out / "test_inner_py__test_buggy-seed7.json"
    assert path.exists(), text
    assert str(path) in text and "--mediagen-plan=" + str(path) in text
    bundle = json.loads(path.read_text())
    assert bundle["format"] == "mediagen-explore-bundle/1" and bundle["seed"] == 7 and bundle["verdict"]["failed"]
    assert 1 <= len(bundle["plan"]["perturbations"]) <= 2
    assert any(p.get("at", "").startswith("POST /v1/generate") for p in bundle["plan"]["perturbations"])
    assert len(tenants) > 2, "runs, then shrink runs"

    # The bundle replays: the buggy client fails under its plan in one run; the careful one passes.
    result, tenants = inner("--mediagen-plan=" + str(path), "-k", "buggy or careful")
    result.assert_outcomes(passed=1, failed=1)
    assert len(tenants) == 2
    result.stdout.fnmatch_lines(["*the test fails under the plan of %s*" % path, "*new-key-on-retry*"])


def test_a_plan_file_that_is_not_one_is_a_usage_error(inner, pytester: pytest.Pytester):
    bad = pytester.path / "bad.json"
    bad.write_text('{"format": "something else"}')
    result, _ = inner("--mediagen-plan=" + str(bad), "-k", "careful")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mediagen-plan:*holds no plan*"])


def test_the_tenant_the_environment_names_is_used_as_it_is(inner, mediagen_server: Emulator, monkeypatch: pytest.MonkeyPatch):
    if not mediagen_server.supports_tenants():
        pytest.skip("the emulator has no tenants")
    name = "given-by-explore"
    mediagen_server.tenant(name).control.set_clock_mode("skip")
    monkeypatch.setenv(URL_ENV, mediagen_server.url)
    monkeypatch.setenv(KEY_ENV, "mg_test_all." + name)
    monkeypatch.setenv(TENANT_ENV, name)
    result, tenants = inner("-k", "unmarked or careful")
    result.assert_outcomes(passed=2)
    assert tenants == [name, "unmarked " + name]
    assert name in {t["name"] for t in mediagen_server.control.tenants()}, "left for explore to judge"
    mediagen_server.control.delete_tenant(name)
