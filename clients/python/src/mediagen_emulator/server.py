"""Starting the emulator binary, or attaching to a running one, and handing out tenants."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sysconfig
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Union, cast

from .control import TENANT_HEADER, Control, EmulatorError, _opener
from .types import Upload

BIN_ENV = "MEDIAGEN_EMULATOR_BIN"
URL_ENV = "MEDIAGEN_EMULATOR_URL"
ADMIN_TOKEN_ENV = "MEDIAGEN_ADMIN_TOKEN"
#: The key, and the tenant, a client under test is run with by `mediagen-emulator explore` and
#: `conformance`; the `mediagen` fixture uses that tenant when they are set.
KEY_ENV = "MEDIAGEN_API_KEY"
TENANT_ENV = "MEDIAGEN_TENANT"
DEFAULT_KEY = "mg_test_all"  # the embedded catalog's key with models:read and generate
LISTENING = "listening on "

_TENANT_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


class EmulatorStartError(RuntimeError):
    """The emulator binary could not be found or did not start listening."""


_EXE = "mediagen-emulator.exe" if os.name == "nt" else "mediagen-emulator"


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _packaged_binary() -> Optional[str]:
    """The binary a platform wheel of this package installed, or None: like Ruff's, it lands
    in the scripts folder (bin/, Scripts\\) of the environment that installed it, which need not
    be on PATH (a venv that is not activated, a --user or --target install)."""
    dirs = [sysconfig.get_path("scripts")]
    user_scheme = getattr(sysconfig, "get_preferred_scheme", lambda _: "%s_user" % os.name)("user")
    try:
        dirs.append(sysconfig.get_path("scripts", scheme=user_scheme))
    except KeyError:
        pass
    # pip install --target DIR puts the package in DIR and the scripts in DIR/bin.
    dirs.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin"))
    for d in dirs:
        if d and _executable(os.path.join(d, _EXE)):
            return os.path.join(d, _EXE)
    return None


def find_binary(path: Optional[str] = None) -> str:
    """The emulator binary to run: `path`, else $MEDIAGEN_EMULATOR_BIN, else the one installed
    with this package (a platform wheel), else `mediagen-emulator` on PATH."""
    for candidate, origin in ((path, "the path given"), (os.environ.get(BIN_ENV), "$" + BIN_ENV)):
        if candidate:
            if _executable(candidate):
                return candidate
            raise EmulatorStartError("%s (%s) is not an executable file" % (candidate, origin))
    found = _packaged_binary() or shutil.which("mediagen-emulator")
    if found:
        return found
    raise EmulatorStartError(
        "no mediagen-emulator binary: this mediagen_emulator has none of its own (a platform wheel "
        "from a release carries one; an install from a checkout does not). Put mediagen-emulator on "
        "PATH (a release archive, or `go install .` in a checkout), set %s=/path/to/mediagen-emulator, "
        "or attach to a running one (the Docker image, say) with %s=http://127.0.0.1:8080"
        % (BIN_ENV, URL_ENV))


def tenant_name(hint: str = "", suffix_len: int = 6) -> str:
    """A tenant name made from a hint (a test's name, say) and a random suffix: only
    [A-Za-z0-9_-], at most 64 characters."""
    base = _TENANT_CHARS.sub("-", hint).strip("-")[: 64 - 1 - suffix_len].rstrip("-") or "t"
    return "%s-%s" % (base, secrets.token_hex(suffix_len)[:suffix_len])


@dataclass
class Tenant:
    """One tenant of an emulator: the URL and credentials a client under test uses, and the
    control API acting on it. Use either `api_key` (the key form KEY.TENANT) or `headers`
    (X-Emulator-Tenant) in the client's requests; both select this tenant."""

    name: str
    base_url: str
    api_key: str
    headers: Dict[str, str]
    control: Control = field(repr=False)

    def key(self, key: str) -> str:
        """Another configured key in this tenant's key form, e.g. key("mg_test_poor")."""
        return "%s.%s" % (key, self.name)

    def delete(self, missing_ok: bool = True) -> None:
        """Drops the tenant and everything in it."""
        self.control.delete_tenant(self.name, missing_ok=missing_ok)

    def upload(self, file: Union[bytes, str, "os.PathLike[str]"], content_type: Optional[str] = None) -> Upload:
        """Sends a file to POST /v1/uploads in this tenant, with its key, and returns the upload:
        its `url` goes in `image_url` (or any media input) until its `expires_at`. `file` is the
        bytes or a path; without `content_type` the emulator reads the type from the bytes. The
        emulator must fetch inputs (`--inputs fetch`, or a scenario's `inputs: fetch`)."""
        if isinstance(file, bytes):
            data = file
        else:
            with open(os.fspath(file), "rb") as f:
                data = f.read()
        headers = {"Authorization": "Bearer " + self.api_key, "Content-Type": content_type or "application/octet-stream"}
        req = urllib.request.Request(self.base_url + "/v1/uploads", data=data, headers=headers, method="POST")
        try:
            with _opener.open(req, timeout=self.control.timeout) as resp:
                return cast(Upload, json.loads(resp.read()))
        except urllib.error.HTTPError as err:
            with err:
                raw = err.read()
            try:
                problem = json.loads(raw) if raw else {}
            except ValueError:
                problem = {}
            raise EmulatorError("POST", "/v1/uploads", err.code, problem if isinstance(problem, dict) else {}, raw) from None


class Emulator:
    """A running emulator: one this process started (`start`), or one it attached to
    (`attach`). A context manager: leaving it stops a started emulator."""

    def __init__(self, url: str, admin_token: Optional[str] = None, process: Optional[subprocess.Popen] = None,
                 log_path: Optional[str] = None, tenant_clock: Optional[str] = None):
        self.url = url.rstrip("/")
        self.admin_token = admin_token
        self.process = process
        self.log_path = log_path
        #: The clock mode the `mediagen` fixture puts each test's tenant on. `attach` makes it
        #: "skip": an emulator in CI is often configured with `--clock manual`, and a test that is
        #: green on the skip clock the helpers start locally would wait there for a clock nobody
        #: moves. None (an emulator this process started): the clock it was started with.
        self.tenant_clock = tenant_clock
        self.returncode: Optional[int] = None
        self.control = Control(self.url, None, admin_token)
        self._tenants_supported: Optional[bool] = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "Emulator(%r, %s)" % (self.url, "started" if self.process else "attached")

    # --- starting and stopping ----------------------------------------------------------------

    @classmethod
    def start(cls, binary: Optional[str] = None, *, seed: Optional[int] = None, clock: Optional[str] = "skip",
              scenario: Optional[str] = None, catalog: Optional[str] = None, admin_token: Optional[str] = None,
              args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None, startup_timeout: float = 30.0) -> "Emulator":
        """Starts the emulator on a free loopback port and returns once it listens.

        `clock` defaults to "skip": time stands still, but a request that waits on a job (a
        wait=true generation, a poll of a job not yet terminal) moves it to the job's next
        transition at once. Pass "manual" for tests that look at a job while it is queued or
        running, "real" or None for the binary's default. `scenario`
        is an embedded name or a YAML path; `args` adds any other flags. The emulator's standard
        error goes to a log file (`log_path`). MEDIAGEN_* variables of this process are not
        passed on, so a developer's shell cannot change a test's emulator; use `env` to add
        variables."""
        exe = find_binary(binary)
        argv: List[str] = [exe, "--addr", "127.0.0.1:0"]
        for flag, value in (("--seed", seed), ("--clock", clock), ("--scenario", scenario),
                            ("--catalog", catalog), ("--admin-token", admin_token)):
            if value is not None:
                argv += [flag, str(value)]
        argv += list(args)
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("MEDIAGEN_")}
        child_env.update(env or {})
        log = tempfile.NamedTemporaryFile(prefix="mediagen-emulator-", suffix=".log", delete=False)
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=child_env)
        except OSError as err:
            log.close()
            os.unlink(log.name)
            raise EmulatorStartError("cannot run %s: %s" % (exe, err)) from None
        finally:
            log.close()
        line = _first_line(proc, startup_timeout)
        if not line.startswith(LISTENING + "http://"):
            proc.kill()
            proc.wait()
            with open(log.name, "rb") as f:
                logged = f.read().decode("utf-8", "replace")[-4000:]
            raise EmulatorStartError("%s did not start (first line %r); its log:\n%s" % (" ".join(argv), line, logged))
        # The emulator prints nothing more on stdout, but an unread pipe could one day block it.
        threading.Thread(target=_drain, args=(proc,), daemon=True).start()
        return cls(line[len(LISTENING):], admin_token, proc, log.name)

    @classmethod
    def attach(cls, url: Optional[str] = None, admin_token: Optional[str] = None,
               clock: Optional[str] = "skip") -> "Emulator":
        """An emulator that is already running (in Docker, in CI): `url`, else
        $MEDIAGEN_EMULATOR_URL; the admin token defaults to $MEDIAGEN_ADMIN_TOKEN. `clock` is
        the mode the `mediagen` fixture puts each test's tenant on (`tenant_clock`), whatever
        the emulator's own: "skip" as when the helpers start the emulator, "manual" or "real",
        or None for the emulator's."""
        url = url or os.environ.get(URL_ENV)
        if not url:
            raise EmulatorStartError("no emulator URL: pass one or set " + URL_ENV)
        if admin_token is None:
            admin_token = os.environ.get(ADMIN_TOKEN_ENV) or None
        return cls(url, admin_token, tenant_clock=clock)

    @classmethod
    def from_env(cls, **start_options) -> "Emulator":
        """Attaches when $MEDIAGEN_EMULATOR_URL is set (its tenants on `start_options`' clock,
        "skip" by default), else starts one with `start_options`."""
        if os.environ.get(URL_ENV):
            return cls.attach(clock=start_options.get("clock", "skip"))
        return cls.start(**start_options)

    def close(self, timeout: float = 15.0) -> Optional[int]:
        """Stops a started emulator gracefully (SIGTERM; SIGKILL after `timeout`) and returns
        its exit status, 0 after a clean shutdown. Does nothing to an attached one."""
        if self.process is None:
            return None
        if self.returncode is None:
            if self.process.poll() is None:
                self.process.terminate()
            try:
                self.returncode = self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.returncode = self.process.wait()
            if self.returncode == 0 and self.log_path:
                try:
                    os.unlink(self.log_path)
                except OSError:
                    pass
        return self.returncode

    def __enter__(self) -> "Emulator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- tenants ------------------------------------------------------------------------------

    def tenant(self, name: str, key: str = DEFAULT_KEY) -> Tenant:
        """The tenant called `name` (it comes into being on its first request)."""
        return Tenant(name=name, base_url=self.url, api_key="%s.%s" % (key, name), headers={TENANT_HEADER: name},
                      control=self.control.for_tenant(name))

    def new_tenant(self, hint: str = "", key: str = DEFAULT_KEY, clock: Optional[str] = None) -> Tenant:
        """A tenant with a fresh name made from `hint` and a random suffix. With `clock`, the
        tenant is put on that clock mode at once, and its control's `reset` keeps it there."""
        tenant = self.tenant(tenant_name(hint), key)
        if clock:
            tenant.control.set_clock_mode(clock)
            tenant.control.clock_mode = clock
        return tenant

    def supports_tenants(self) -> bool:
        """Whether the emulator knows tenants (answers GET /_emulator/tenants); asked once."""
        with self._lock:
            if self._tenants_supported is None:
                try:
                    self.control.tenants()
                    self._tenants_supported = True
                except EmulatorError as err:
                    if err.status not in (404, 405):
                        raise
                    self._tenants_supported = False
            return self._tenants_supported


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    """The first line the process prints, or "" if it exits or stays silent for `timeout`."""
    got: List[bytes] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        proc.kill()  # closes the pipe, so the reader ends too
        reader.join(5)
    return got[0].decode("utf-8", "replace").strip() if got else ""


def _drain(proc: subprocess.Popen) -> None:
    out = proc.stdout
    if out is None:
        return
    try:
        while out.read(65536):
            pass
    except (OSError, ValueError):
        pass
    finally:
        out.close()
