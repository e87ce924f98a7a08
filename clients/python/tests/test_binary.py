"""Finding the binary a platform wheel installed, and `python -m mediagen_emulator` running it."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig

import pytest

import mediagen_emulator
from mediagen_emulator import BIN_ENV, EmulatorStartError, find_binary
from mediagen_emulator.server import _packaged_binary

SRC = os.path.dirname(os.path.dirname(os.path.abspath(mediagen_emulator.__file__)))


def fake_binary(folder, body="#!/bin/sh\n"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("mediagen-emulator.exe" if os.name == "nt" else "mediagen-emulator")
    path.write_text(body)
    path.chmod(0o755)
    return path


@pytest.mark.skipif(os.name == "nt", reason="a shell script stands in for the binary")
def test_the_wheels_binary_is_found_without_path_or_variable(tmp_path, monkeypatch):
    scripts = tmp_path / "venv" / "bin"
    monkeypatch.setattr(sysconfig, "get_path", lambda name, *a, **k: str(scripts) if name == "scripts" else "")
    monkeypatch.delenv(BIN_ENV, raising=False)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(EmulatorStartError) as err:
        find_binary()
    assert "@latest" not in str(err.value)  # that module path answers 403 until it is published
    assert "go install ." in str(err.value)

    packaged = fake_binary(scripts)
    assert find_binary() == str(packaged)

    on_path = fake_binary(tmp_path / "elsewhere")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert find_binary() == str(packaged)  # the wheel's own comes before PATH
    monkeypatch.setenv(BIN_ENV, str(on_path))
    assert find_binary() == str(on_path)  # the variable comes before the wheel's


@pytest.mark.skipif(os.name == "nt", reason="a shell script stands in for the binary")
def test_python_m_runs_the_binary_with_its_arguments(tmp_path):
    fake = fake_binary(tmp_path, '#!/bin/sh\necho "ran with $*"\nexit 3\n')
    env = dict(os.environ, **{BIN_ENV: str(fake), "PYTHONPATH": SRC})
    done = subprocess.run([sys.executable, "-m", "mediagen_emulator", "--seed", "42", "version"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (3, "ran with --seed 42 version\n")


def test_python_m_without_a_binary_says_what_works(tmp_path):
    if _packaged_binary():
        pytest.skip("this Python has a platform wheel's binary installed")
    env = {k: v for k, v in os.environ.items() if k != BIN_ENV}
    env.update(PATH=str(tmp_path), PYTHONPATH=SRC)
    done = subprocess.run([sys.executable, "-m", "mediagen_emulator", "version"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "no mediagen-emulator binary" in done.stderr and BIN_ENV in done.stderr
    assert "@latest" not in done.stderr and "go install ." in done.stderr


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
@pytest.mark.parametrize("via", ["python -m mediagen_emulator ARGS", "python -m mediagen_emulator -- COMMAND"])
def test_sigterm_to_the_launcher_frees_the_port(via, mediagen_server):
    """`kill $!` on either form of the launcher stops the emulator and frees its port."""
    import re
    import signal
    import socket
    import time

    binary = mediagen_server.process.args[0] if mediagen_server.process else find_binary()
    if via.endswith("ARGS"):  # the binary itself, by exec
        argv = ["--addr", "127.0.0.1:0"]
    else:  # a command around a fresh emulator: the command prints the emulator's address
        argv = ["--", sys.executable, "-c", "import os, time; print(os.environ['MEDIAGEN_EMULATOR_URL'], flush=True); time.sleep(600)"]
    env = dict(os.environ, PYTHONPATH=SRC, **{BIN_ENV: binary})
    proc = subprocess.Popen([sys.executable, "-m", "mediagen_emulator", *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert m, line
        port = int(m.group(1))
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 20  # a process exiting, not the emulator's clock
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) != 0:
                    break
            assert time.monotonic() < deadline, "port %d still open after the launcher was stopped" % port
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
