"""The plugin's options on what a run proved, run the way a user runs them: pytest in a
subprocess, with and without xdist, against the real binary."""

from __future__ import annotations

import os

import pytest

import mediagen_emulator
from mediagen_emulator import URL_ENV, Emulator, find_binary, pytest_plugin

INNER = '''
import json
import urllib.error
import urllib.request

import pytest

opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def v1(tenant, method, path, body=None, headers=None):
    req = urllib.request.Request(tenant.base_url + path, None if body is None else json.dumps(body).encode(),
                                 {"Authorization": "Bearer " + tenant.api_key, "Content-Type": "application/json",
                                  **(headers or {})}, method=method)
    try:
        with opener.open(req) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.loads(err.read())


def test_missing_model(mediagen):
    assert v1(mediagen, "GET", "/v1/models/no/such-model")[0] == 404


@pytest.mark.mediagen_expect_error(status=404, code="model_not_found")
def test_missing_model_expected(mediagen):
    assert v1(mediagen, "GET", "/v1/models/no/such-model")[0] == 404


def test_quote_used_twice(mediagen):
    model = v1(mediagen, "GET", "/v1/models?category=text-to-image&limit=1")[1]["data"][0]["id"]
    body = {"model": model, "input": {"prompt": "a cat"}}
    body["quote_id"] = v1(mediagen, "POST", "/v1/quotes", body)[1]["quote_id"]
    status, job = v1(mediagen, "POST", "/v1/generate", body, {"Idempotency-Key": "a"})
    assert status == 202 and v1(mediagen, "GET", "/v1/jobs/" + job["id"])[0] == 200
    assert v1(mediagen, "POST", "/v1/generate", body, {"Idempotency-Key": "b"})[0] == 409
    mediagen.control.expect_error(code="quote_already_used")  # provoked on purpose: no finding


def test_retry_with_a_new_key(mediagen):
    model = v1(mediagen, "GET", "/v1/models?category=text-to-image&limit=1")[1]["data"][0]["id"]
    body = {"model": model, "input": {"prompt": "a dog"}}
    body["quote_id"] = v1(mediagen, "POST", "/v1/quotes", body)[1]["quote_id"]
    mediagen.control.add_fault(match={"method": "POST", "path": "/v1/generate"}, status=503, count=1)
    mediagen.control.expect_error(status=503)  # the outage is the test's own doing; the retry is not
    assert v1(mediagen, "POST", "/v1/generate", body, {"Idempotency-Key": "a"})[0] == 503
    mediagen.control.advance("5s")  # it waits out Retry-After
    assert v1(mediagen, "POST", "/v1/generate", body, {"Idempotency-Key": "b"})[0] == 202
'''


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mediagen_server: Emulator):
    """Runs pytest on the inner tests in a subprocess with the plugin and the given arguments."""
    if not mediagen_server.supports_tenants():
        pytest.skip("the emulator has no tenants")
    pytester.makepyfile(test_inner=INNER)
    src = os.path.dirname(os.path.dirname(os.path.abspath(mediagen_emulator.__file__)))
    monkeypatch.setenv("PYTHONPATH", src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("MEDIAGEN_EMULATOR_BIN", mediagen_server.process.args[0] if mediagen_server.process else find_binary())
    monkeypatch.delenv(URL_ENV, raising=False)

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess("-p", "mediagen_emulator.pytest_plugin", "-p", "no:cacheprovider", *args)

    return run


def test_unexpected_errors_fail_the_test(run):
    result = run("--mediagen-fail-on-unexpected")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*1 unexpected error in tenant test_missing_model-*",
                                 "*#1 GET /v1/models/no/such-model -> 404 model_not_found: *",
                                 '*response: {*"code": "model_not_found"*',
                                 "FAILED test_inner.py::test_missing_model"])
    run().assert_outcomes(passed=4)  # off by default


def test_coverage_and_its_gate(run):
    result = run("--mediagen-coverage", "--mediagen-require", "GET /v1/models/{model} 404 *",
                 "--mediagen-require", "job failed *")
    assert result.ret == 1  # every test passed; the gate failed the run
    result.assert_outcomes(passed=4)
    # The short form every helper prints, as Go's emulatortest.ShortCoverage.
    result.stdout.fnmatch_lines(["*mediagen-emulator coverage*",
                                 "emulator coverage (the whole run): * of * cases exercised",
                                 "  errors     * of *",
                                 "  jobs       * of *",
                                 "required but never exercised (*):",
                                 "  job failed generation_failed",
                                 "mediagen-emulator: * required cases never exercised: *job failed provider_error*"])
    assert "GET /v1/models/{model} 404 model_not_found" not in result.stdout.str()  # two tests exercised it

    verbose = run("-v", "--mediagen-coverage", "--mediagen-require", "GET /v1/models/{model} 404 *")
    assert verbose.ret == 0
    verbose.stdout.fnmatch_lines(["errors:", "*2  GET /v1/models/{model} 404 model_not_found"])


def test_report_and_failing_on_rules(run):
    result = run("--mediagen-report")
    assert result.ret == 0
    # The reused quote was declared, so it is no finding; the new key on a retry was not.
    result.stdout.fnmatch_lines(["*mediagen-emulator report (run): 1 finding in * requests*",
                                 "error   new-key-on-retry  *1  *",
                                 "findings:",
                                 "  new-key-on-retry: * (tenant test_retry_with_a_new_key-*) #*"])
    failed = run("--mediagen-fail-on-rule", "warning")  # warning or worse: new-key-on-retry is an error
    assert failed.ret == 1
    failed.stdout.fnmatch_lines(["mediagen-emulator: the report has findings of rules that fail the run: new-key-on-retry (1)"])
    assert run("--mediagen-fail-on-rule", "poll-*", "--mediagen-fail-on-rule", "quote-reused").ret == 0


@pytest.mark.parametrize("selectors, chosen", [
    (["quote-reused"], True), (["quote-*"], True), (["error"], True), (["warning"], True), (["info"], True),
    (["poll-*", "new-key-on-retry"], False), (["quote-reuse"], False), ([], False),
])
def test_rule_selectors(selectors, chosen):
    assert pytest_plugin._selected("quote-reused", "error", selectors) is chosen
    assert pytest_plugin._selected("outputs-never-downloaded", "info", ["warning"]) is False


def test_xdist_one_emulator_one_summary(run, pytester: pytest.Pytester):
    pytest.importorskip("xdist")
    summary = pytester.path / "summary.md"
    result = run("-n", "2", "--mediagen-coverage", "--mediagen-report", "--mediagen-summary-file", str(summary))
    assert result.ret == 0
    out = result.stdout.str()
    assert out.count("emulator coverage (the whole run)") == 1 and out.count("mediagen-emulator report (run)") == 1
    # The workers' tenants, all seen by the controller's one emulator.
    result.stdout.fnmatch_lines(["*new-key-on-retry: * (tenant test_retry_with_a_new_key-*)*"])
    assert "GET /v1/models/{model} 404 model_not_found" not in out
    md = summary.read_text()
    assert "model_not_found" in md and "new-key-on-retry" in md and "|" in md
    run("--mediagen-summary-file", str(summary))
    assert summary.read_text().startswith(md) and len(summary.read_text()) > len(md)  # appended


def test_ini_options(run, pytester: pytest.Pytester):
    pytester.makeini("""
        [pytest]
        mediagen_fail_on_unexpected = true
        mediagen_report = true
        mediagen_require =
            job canceled
        mediagen_summary_file = $MEDIAGEN_TEST_NO_SUCH_VARIABLE
    """)
    result = run()
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*mediagen-emulator report (run)*", "*1 required case never exercised: job canceled"])
    assert not list(pytester.path.glob("$*"))  # an unset variable names no file


def test_xdist_attached_by_url(run, mediagen_server: Emulator, monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("xdist")
    monkeypatch.setenv(URL_ENV, mediagen_server.url)
    result = run("-n", "2", "--mediagen-report")
    assert result.ret == 0
    assert result.stdout.str().count("mediagen-emulator report (run)") == 1
    result.stdout.fnmatch_lines(["*new-key-on-retry: * (tenant test_retry_with_a_new_key-*)*"])
    assert mediagen_server.control.report(scope="run")["counts"]["new-key-on-retry"] >= 1  # the emulator of this session


def test_an_emulator_that_cannot_answer(run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    monkeypatch.setenv(URL_ENV, "http://127.0.0.1:9")  # nothing listens on the discard port
    printed = run("test_plain.py", "--mediagen-coverage")
    assert printed.ret == 0  # printing is best effort
    printed.stdout.fnmatch_lines(["cannot read the run's coverage and report from http://127.0.0.1:9: *"])
    gated = run("test_plain.py", "--mediagen-require", "job *")
    assert gated.ret == 1  # a gate that cannot be judged fails
    gated.stdout.fnmatch_lines(["mediagen-emulator: cannot read the run's coverage and report from http://127.0.0.1:9: *"])
