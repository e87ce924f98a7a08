"""Runs a command with an emulator around it:

    python -m mediagen_emulator [--seed N] [--clock skip|manual|real] [--scenario S] [--catalog F]
                                [--admin-token T] [--bin PATH] -- COMMAND...

starts the emulator, runs COMMAND with MEDIAGEN_EMULATOR_URL (and MEDIAGEN_ADMIN_TOKEN) set so
every test process attaches to it, stops it, and exits with COMMAND's status (or 1 when the
emulator did not shut down cleanly). SIGINT, SIGTERM and SIGHUP go on to COMMAND; the emulator
stops once COMMAND has ended, so `kill $!` frees the port.

Without a `--`, it runs the emulator binary itself (the one a platform wheel installed, else
$MEDIAGEN_EMULATOR_BIN or PATH) with the arguments given, as `python -m ruff` runs Ruff:

    python -m mediagen_emulator --seed 42      # serves on http://127.0.0.1:8080
    python -m mediagen_emulator version
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from typing import List, Optional

from .server import ADMIN_TOKEN_ENV, URL_ENV, Emulator, EmulatorStartError, find_binary


def run_binary(args: List[str]) -> int:
    """Runs the emulator binary with `args` in the foreground and returns its exit status."""
    try:
        exe = find_binary()
    except EmulatorStartError as err:
        print("mediagen_emulator: %s" % err, file=sys.stderr)
        return 2
    if os.name != "nt":
        os.execv(exe, [exe, *args])  # signals and the exit status are the binary's own
    try:
        return subprocess.call([exe, *args])
    except KeyboardInterrupt:
        return 130


def main(argv: Optional[List[str]] = None) -> int:
    """Parses the command line, runs the command (or the binary alone), returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if "--" not in args:
        return run_binary(args)
    parser = argparse.ArgumentParser(prog="python -m mediagen_emulator", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", help="the emulator binary (default: $MEDIAGEN_EMULATOR_BIN, then the one installed with this package, then PATH)")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--clock", default="skip", choices=["skip", "manual", "real"])
    parser.add_argument("--scenario")
    parser.add_argument("--catalog")
    parser.add_argument("--admin-token")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    ns = parser.parse_args(args)
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if not command:
        parser.error("give a command to run after --")
    try:
        emu = Emulator.start(ns.bin, seed=ns.seed, clock=ns.clock, scenario=ns.scenario, catalog=ns.catalog,
                             admin_token=ns.admin_token)
    except EmulatorStartError as err:
        print("mediagen_emulator: %s" % err, file=sys.stderr)
        return 2
    env = dict(os.environ, **{URL_ENV: emu.url})
    if ns.admin_token:
        env[ADMIN_TOKEN_ENV] = ns.admin_token
    print("mediagen_emulator: %s listening on %s" % (os.path.basename(emu.process.args[0]), emu.url), file=sys.stderr)
    stopped: List[int] = []
    try:
        child = subprocess.Popen(command, env=env)

        def forward(signum: int, _frame: object) -> None:
            stopped.append(signum)
            child.send_signal(signum)

        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), forward)
        status = child.wait()
        if status < 0:  # ended by a signal: report it the way a shell does
            status = 128 - status
    except OSError as err:
        print("mediagen_emulator: cannot run %s: %s" % (command[0], err), file=sys.stderr)
        status = 127
    finally:
        code = emu.close()
    if code != 0:
        print("mediagen_emulator: the emulator exited with %s (log: %s)" % (code, emu.log_path), file=sys.stderr)
        return status or 1
    return status


if __name__ == "__main__":
    sys.exit(main())
