"""The pytest plugin, run the way a user runs it: pytest in a subprocess, with and without xdist."""

from __future__ import annotations

import os

import pytest

import mediagen_emulator
from mediagen_emulator import URL_ENV, Emulator, find_binary

INNER = '''
import os
import pytest

@pytest.fixture(scope="session")
def mediagen_server_options():
    return {"seed": 42}

@pytest.mark.parametrize("n", range(6))
def test_server(mediagen_server, n):
    with open(%(out)r, "a") as f:
        f.write("server %%s %%s %%s\\n" %% (os.environ.get("PYTEST_XDIST_WORKER", "-"), mediagen_server.url,
                                          mediagen_server.control.health()["seeded"]))

def test_tenant(mediagen):
    assert mediagen.api_key == "mg_test_all." + mediagen.name
    assert mediagen.headers == {"X-Emulator-Tenant": mediagen.name}
    assert mediagen.control.tenant == mediagen.name
    mediagen.control.advance("1m")
    with open(%(out)r, "a") as f:
        f.write("tenant %%s %%s\\n" %% (mediagen.name, mediagen.base_url))
'''


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mediagen_server: Emulator):
    """Writes the inner test file; returns (run, lines of what the inner tests saw)."""
    out = pytester.path / "seen.txt"
    pytester.makepyfile(test_inner=INNER % {"out": str(out)})
    src = os.path.dirname(os.path.dirname(os.path.abspath(mediagen_emulator.__file__)))
    monkeypatch.setenv("PYTHONPATH", src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    binary = mediagen_server.process.args[0] if mediagen_server.process else find_binary()
    monkeypatch.setenv("MEDIAGEN_EMULATOR_BIN", binary)
    monkeypatch.delenv(URL_ENV, raising=False)

    def run(*args: str):
        result = pytester.runpytest_subprocess("-p", "mediagen_emulator.pytest_plugin", "-p", "no:cacheprovider", *args)
        lines = out.read_text().splitlines() if out.exists() else []
        out.unlink(missing_ok=True)
        return result, [line.split() for line in lines]

    return run


def _check_tenant(result, seen, emu: Emulator, alive: bool):
    """Checks the inner test_tenant ran (or skipped on an emulator without tenants); when the
    inner run used `emu` itself, checks its tenant is gone."""
    tenants = [row for row in seen if row[0] == "tenant"]
    if not emu.supports_tenants():
        result.assert_outcomes(passed=6, skipped=1)
        assert "does not support tenants" in result.stdout.str() or "skipped" in result.stdout.str()
        return
    result.assert_outcomes(passed=7)
    [(_, name, url)] = tenants
    assert name.startswith("test_tenant-")
    if alive:
        assert url == emu.url
        assert name not in {t["name"] for t in emu.control.tenants()}, "deleted after the test"


def test_one_emulator_for_the_session(inner, mediagen_server: Emulator):
    result, seen = inner("-rs")
    servers = {tuple(row[2:]) for row in seen if row[0] == "server"}
    assert len(servers) == 1 and list(servers)[0][1] == "True"  # started once, with the overridden options
    _check_tenant(result, seen, mediagen_server, alive=False)


def test_attach_by_url(inner, mediagen_server: Emulator, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(URL_ENV, mediagen_server.url)
    result, seen = inner()
    assert {row[2] for row in seen if row[0] == "server"} == {mediagen_server.url}
    _check_tenant(result, seen, mediagen_server, alive=True)


def test_xdist_worker_per_emulator_or_shared(inner, mediagen_server: Emulator):
    pytest.importorskip("xdist")
    result, seen = inner("-n", "2")
    per_worker = {(row[1], row[2]) for row in seen if row[0] == "server"}
    assert len({w for w, _ in per_worker}) == 2 and len({u for _, u in per_worker}) == 2
    _check_tenant(result, seen, mediagen_server, alive=False)

    result, seen = inner("-n", "2", "--mediagen-shared")
    shared = {(row[1], row[2]) for row in seen if row[0] == "server"}
    assert len({w for w, _ in shared}) == 2 and len({u for _, u in shared}) == 1
    _check_tenant(result, seen, mediagen_server, alive=False)
