"""Starting, attaching, stopping, and the helpers around them."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys

import pytest

from mediagen_emulator import (BIN_ENV, URL_ENV, Emulator, EmulatorError, EmulatorStartError, find_binary, parse_time,
                               tenant_name)
from mediagen_emulator.control import duration_text, time_text


def test_start_and_stop_gracefully(mediagen_server: Emulator):
    binary = mediagen_server.process.args[0] if mediagen_server.process else find_binary()
    with Emulator.start(binary, seed=7, scenario="flaky", args=["--quote-ttl", "2m"]) as emu:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", emu.url)
        h = emu.control.health()
        assert (h["status"], h["clock"], h["scenario"], h["seeded"]) == ("ok", "skip", "flaky", True)
    assert emu.returncode == 0
    assert emu.close() == 0  # closing twice is harmless
    assert not os.path.exists(emu.log_path)  # a clean run leaves no log behind


def test_real_clock_and_admin_token(mediagen_server: Emulator):
    binary = mediagen_server.process.args[0] if mediagen_server.process else find_binary()
    with Emulator.start(binary, clock="real", admin_token="s3cret") as emu:
        assert emu.control.clock()["mode"] == "real"
        anonymous = Emulator(emu.url)
        with pytest.raises(EmulatorError) as err:
            anonymous.control.clock()
        assert err.value.status in (401, 403)
        assert err.value.code == "admin_token_required"
        assert Emulator.attach(emu.url, admin_token="s3cret").control.clock()["mode"] == "real"


def test_a_bad_start_says_why(tmp_path, mediagen_server: Emulator):
    binary = mediagen_server.process.args[0] if mediagen_server.process else find_binary()
    bad = tmp_path / "catalog.yaml"
    bad.write_text("models: [\n")
    with pytest.raises(EmulatorStartError) as err:
        Emulator.start(binary, catalog=str(bad))
    assert "did not start" in str(err.value)
    assert "catalog.yaml" in str(err.value)  # the emulator's own message, from its log
    with pytest.raises(EmulatorStartError) as err:
        Emulator.start(str(tmp_path / "missing"))
    assert "not an executable file" in str(err.value)


def test_find_binary_order(tmp_path, monkeypatch):
    fake = tmp_path / "mediagen-emulator"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv(BIN_ENV, str(fake))
    assert find_binary() == str(fake)
    assert find_binary(sys.executable) == sys.executable  # an explicit path wins
    monkeypatch.delenv(BIN_ENV)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_binary() == str(fake)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(EmulatorStartError) as err:
        find_binary()
    assert BIN_ENV in str(err.value)


def test_attach_reads_the_environment(monkeypatch):
    monkeypatch.setenv(URL_ENV, "http://127.0.0.1:9/")
    monkeypatch.setenv("MEDIAGEN_ADMIN_TOKEN", "tok")
    emu = Emulator.from_env()
    assert (emu.url, emu.admin_token, emu.process) == ("http://127.0.0.1:9", "tok", None)
    assert emu.close() is None  # nothing to stop
    monkeypatch.delenv(URL_ENV)
    with pytest.raises(EmulatorStartError):
        Emulator.attach()


def test_tenant_names():
    names = {tenant_name("tests/test_x.py::test_y[a b/ç]") for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name), name
        assert name.startswith("tests-test_x-py-test_y-a-b-")
    assert re.fullmatch(r"[A-Za-z0-9_-]{64}", tenant_name("x" * 200))
    assert re.fullmatch(r"t-[0-9a-f]{6}", tenant_name("//"))


def test_tenant_handles():
    t = Emulator("http://127.0.0.1:1").tenant("checkout-1")
    assert t.api_key == "mg_test_all.checkout-1"
    assert t.key("mg_test_poor") == "mg_test_poor.checkout-1"
    assert t.headers == {"X-Emulator-Tenant": "checkout-1"}
    assert t.control.headers == {"X-Emulator-Tenant": "checkout-1"}


def test_spelling_of_durations_and_times():
    assert duration_text("1h30m") == "1h30m"
    assert duration_text(90) == "90s"
    assert duration_text(0.25) == "0.25s"
    assert duration_text(dt.timedelta(minutes=2, microseconds=1)) == "120.000001s"
    with pytest.raises(TypeError):
        duration_text(True)
    assert time_text(dt.datetime(2026, 1, 1, 0, 10)) == "2026-01-01T00:10:00Z"
    assert time_text(dt.datetime(2026, 1, 1, 1, 10, tzinfo=dt.timezone(dt.timedelta(hours=1)))) == "2026-01-01T00:10:00Z"
    assert parse_time("2026-01-01T00:10:00.123456789Z") == dt.datetime(2026, 1, 1, 0, 10, 0, 123456, tzinfo=dt.timezone.utc)


def test_run_a_command_with_an_emulator(mediagen_server: Emulator):
    binary = mediagen_server.process.args[0] if mediagen_server.process else find_binary()
    probe = ("import os, sys; from mediagen_emulator import Emulator; "
             "emu = Emulator.attach(); assert emu.control.health()['status'] == 'ok'; sys.exit(3)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop(URL_ENV, None)
    done = subprocess.run([sys.executable, "-m", "mediagen_emulator", "--bin", binary, "--", sys.executable, "-c", probe],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr  # the command's own status
    assert "listening on http://127.0.0.1:" in done.stderr
