"""Snapshots from Python: snapshot and restore on the control client, and the pytest plugin's
--mediagen-snapshot-on-failure, against the real emulator."""

from __future__ import annotations

import json
import os
import re

import pytest

import mediagen_emulator
from _client import Client, image_model
from mediagen_emulator import URL_ENV, Emulator, EmulatorError, Tenant, find_binary

ACCOUNT = "acct_poor"


def _busy(t: Tenant) -> str:
    """Credits set, a fault, a job half-way on the manual clock; returns the job's id."""
    c = t.control
    c.set_credits(ACCOUNT, 4242)
    c.add_fault(match={"path": "/v1/models"}, status=503, count=2)
    job = Client(t).generate(image_model(t.base_url), {"prompt": "a lighthouse"}, "snap-key")
    assert job.status == 202, job.body
    c.advance(0.3)
    return job.json()["id"]


@pytest.fixture
def other(mediagen_server: Emulator):
    if not mediagen_server.supports_tenants():
        pytest.skip("the emulator has no tenants")
    t = mediagen_server.new_tenant("restored")
    yield t
    t.delete(missing_ok=True)


def test_snapshot_restores_into_another_tenant(mediagen: Tenant, other: Tenant, tmp_path):
    job_id = _busy(mediagen)
    snap = mediagen.control.snapshot()
    assert snap["format"] == 1 and snap["tenant"] == mediagen.name
    assert "journal" not in snap
    assert [j["id"] for j in snap["jobs"]] == [job_id]
    with_journal = mediagen.control.snapshot(journal=True)
    assert with_journal["journal"]["entries"]

    path = tmp_path / "world.json"
    path.write_text(json.dumps(with_journal))
    for doc in (snap, json.dumps(snap).encode(), json.dumps(snap), str(path), path):  # a dict, bytes, text, a path
        got = other.control.restore(doc)
        assert got["status"] == "restored" and got["tenant"] == other.name and got["jobs"] == 1
        assert other.control.balance(ACCOUNT) == mediagen.control.balance(ACCOUNT)
        assert other.control.now() == mediagen.control.now()
    assert other.control.requests(), "the file's journal was restored"

    # The restored job goes on as the original does.
    mediagen.control.advance("1m")
    other.control.advance("1m")
    original = Client(mediagen).request("GET", "/v1/jobs/" + job_id).json()
    restored = Client(other).request("GET", "/v1/jobs/" + job_id).json()
    assert restored["status"] == original["status"] == "succeeded"


def test_refused_restore_changes_nothing_and_says_where(mediagen: Tenant):
    _busy(mediagen)
    c = mediagen.control
    snap = c.snapshot()
    with pytest.raises(EmulatorError) as err:
        c.restore({"format": 2})
    assert err.value.status == 422 and err.value.code == "invalid_snapshot"
    assert err.value.problem["errors"][0]["pointer"] == "/format"
    with pytest.raises(EmulatorError) as err:
        c.restore(json.dumps(snap).encode()[:200])
    assert "not complete JSON" in str(err.value)

    # Every problem is in the message, with its pointer.
    edited = json.loads(json.dumps(snap).replace(image_model(mediagen.base_url), "acme/none"))
    edited["accounts"][0]["held"] += 1
    with pytest.raises(EmulatorError) as err:
        c.restore(edited)
    pointers = [e["pointer"] for e in err.value.problem["errors"]]
    assert len(pointers) > 1, err.value.problem
    for p in pointers:
        assert "\n  %s: " % p in str(err.value)
    assert "acme/none" in str(err.value)

    assert c.balance(ACCOUNT)["available"] == 4242, "a refused restore changed the tenant"
    with pytest.raises(TypeError):
        c.restore(42)  # type: ignore[arg-type]


INNER = '''
def test_passes(mediagen):
    mediagen.control.set_credits("acct_poor", 1)

def test_fails(mediagen):
    mediagen.control.set_credits("acct_poor", 4242)
    assert False, "the world is kept"
'''


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mediagen_server: Emulator):
    """Runs the inner tests with the plugin, attached to this session's emulator."""
    if not mediagen_server.supports_tenants():
        pytest.skip("the emulator has no tenants")
    pytester.makepyfile(test_inner=INNER)
    src = os.path.dirname(os.path.dirname(os.path.abspath(mediagen_emulator.__file__)))
    monkeypatch.setenv("PYTHONPATH", src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("MEDIAGEN_EMULATOR_BIN", mediagen_server.process.args[0] if mediagen_server.process else find_binary())
    monkeypatch.setenv(URL_ENV, mediagen_server.url)
    monkeypatch.delenv("MEDIAGEN_SNAPSHOT_DIR", raising=False)

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess("-p", "mediagen_emulator.pytest_plugin", "-p", "no:cacheprovider", *args)

    return run


def _saved(result: pytest.RunResult, directory) -> str:
    """The one snapshot file in directory, named in the failed test's report."""
    result.assert_outcomes(passed=1, failed=1)
    files = sorted(os.listdir(directory))
    assert len(files) == 1 and files[0].startswith("test_fails-") and files[0].endswith(".json"), files
    path = os.path.join(str(directory), files[0])
    out = result.stdout.str()
    assert "mediagen-emulator snapshot" in out
    assert path in out
    return path


def test_plugin_saves_a_failed_tests_tenant(inner, pytester: pytest.Pytester, other: Tenant, monkeypatch):
    directory = pytester.path / "snaps"
    path = _saved(inner("--mediagen-snapshot-on-failure", str(directory)), directory)
    with open(path) as f:
        assert json.load(f)["journal"] is not None
    other.control.restore(path)
    assert other.control.balance(ACCOUNT)["available"] == 4242

    # The same from the ini file, and from the environment.
    by_ini = pytester.path / "by-ini"
    ini = pytester.makeini("[pytest]\nmediagen_snapshot_on_failure = %s\n" % by_ini)
    _saved(inner(), by_ini)
    ini.unlink()
    by_env = pytester.path / "by-env"
    monkeypatch.setenv("MEDIAGEN_SNAPSHOT_DIR", str(by_env))
    _saved(inner(), by_env)


def test_plugin_saves_nothing_unless_asked(inner, pytester: pytest.Pytester):
    result = inner()
    result.assert_outcomes(passed=1, failed=1)
    assert "mediagen-emulator snapshot" not in result.stdout.str()
    assert not list(pytester.path.glob("**/test_fails-*.json"))


def test_the_snapshots_guide_example(mediagen: Tenant, other: Tenant, tmp_path, monkeypatch: pytest.MonkeyPatch):
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "snapshots.md")
    with open(readme, encoding="utf-8") as f:
        [code] = [b for b in re.findall(r"```python\n(.*?)```", f.read(), re.S) if "save_snapshot" in b]
    mediagen.control.set_credits(ACCOUNT, 4242)
    monkeypatch.chdir(tmp_path)
    seen = {"tenant": mediagen, "other": other}
    exec(code, seen)
    assert other.control.balance(ACCOUNT)["available"] == 4242
    assert os.path.dirname(seen["path"]) == str(tmp_path / "snapshots")
    assert os.path.basename(seen["path"]).startswith("my-test-")
    with open(seen["path"]) as f:
        assert json.load(f)["journal"] is not None
