"""A typed client for the emulator's control API (/_emulator/...), bound to one tenant."""

from __future__ import annotations

import datetime as _dt
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Mapping, Optional, Union, cast

from .types import (Balance, Clock, Fault, FaultSpec, Health, Job, JournalEntry, Problem, ResetResult, Scenario,
                    TenantInfo)

TENANT_HEADER = "X-Emulator-Tenant"
ADMIN_TOKEN_HEADER = "X-Emulator-Admin-Token"

Duration = Union[str, int, float, _dt.timedelta]
"""A clock step: "90s" or "1h30m" (Go syntax), a number of seconds, or a timedelta."""

# Requests go straight to the emulator: a proxy from HTTP_PROXY would see (and usually refuse)
# loopback addresses.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class EmulatorError(Exception):
    """An answer from the emulator that is not a success, with its problem body."""

    def __init__(self, method: str, path: str, status: int, problem: Mapping[str, Any], body: bytes = b""):
        self.method, self.path, self.status, self.body = method, path, status, body
        #: The problem body; empty when the answer was not one.
        self.problem = cast(Problem, dict(problem))
        self.code: Optional[str] = problem.get("code")
        self.detail: Optional[str] = problem.get("detail")
        text = self.detail or body.decode("utf-8", "replace")[:300]
        super().__init__("%s %s: %d %s: %s" % (method, path, status, self.code or "error", text))


class EmulatorTimeout(Exception):
    """What the test waited for did not happen in time."""


def duration_text(d: Duration) -> str:
    """The emulator's spelling of a duration: Go syntax, or seconds."""
    if isinstance(d, str):
        return d
    if isinstance(d, _dt.timedelta):
        d = d.total_seconds()
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        raise TypeError("a duration is a string such as '90s', a number of seconds, or a timedelta")
    if d == int(d):
        return "%ds" % int(d)
    return ("%.9f" % d).rstrip("0") + "s"


def time_text(t: Union[str, _dt.datetime]) -> str:
    """An RFC 3339 UTC time; a naive datetime is taken as UTC."""
    if isinstance(t, str):
        return t
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t.astimezone(_dt.timezone.utc).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> _dt.datetime:
    """Reads an RFC 3339 time from the emulator (fractions beyond microseconds dropped)."""
    text = text.replace("Z", "+00:00")
    if "." in text:  # Python before 3.11 takes at most six digits of a fraction
        head, rest = text.split(".", 1)
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = head + "." + rest[:min(digits, 6)].ljust(6, "0") + rest[digits:]
    return _dt.datetime.fromisoformat(text)


class Control:
    """The control API of one emulator, acting on one tenant (the default one when `tenant` is
    None). Every method sends one request (`wait_for_waiting` may poll an older emulator) and
    raises EmulatorError for an answer that is not a success."""

    def __init__(self, base_url: str, tenant: Optional[str] = None, admin_token: Optional[str] = None,
                 timeout: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self.tenant = tenant
        self.admin_token = admin_token
        self.timeout = timeout

    def __repr__(self) -> str:
        return "Control(%r, tenant=%r)" % (self.base_url, self.tenant)

    def for_tenant(self, tenant: Optional[str]) -> "Control":
        """The same emulator's control API acting on another tenant."""
        return Control(self.base_url, tenant, self.admin_token, self.timeout)

    @property
    def headers(self) -> Dict[str, str]:
        """The headers every control request carries: tenant and admin token, when set."""
        h = {}
        if self.tenant is not None:
            h[TENANT_HEADER] = self.tenant
        if self.admin_token:
            h[ADMIN_TOKEN_HEADER] = self.admin_token
        return h

    def call(self, method: str, path: str, body: Any = None, query: Optional[Mapping[str, Any]] = None,
             timeout: Optional[float] = None) -> Any:
        """Sends one request to the control API and returns the decoded JSON answer (None for
        an empty one)."""
        url = self.base_url + path
        if query:
            params = {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items() if v is not None}
            if params:
                url += "?" + urllib.parse.urlencode(params)
        headers = self.headers
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with _opener.open(req, timeout=timeout or self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            with err:
                raw = err.read()
            try:
                problem = json.loads(raw) if raw else {}
            except ValueError:
                problem = {}
            raise EmulatorError(method, path, err.code, problem if isinstance(problem, dict) else {}, raw) from None
        return json.loads(raw) if raw else None

    # --- health and reset --------------------------------------------------------------------

    def health(self) -> Health:
        """The emulator's version, clock, scenario and how many wait=true requests wait."""
        return cast(Health, self.call("GET", "/_emulator/health"))

    def reset(self) -> ResetResult:
        """Puts the tenant's quotes, jobs, keys, balances, journal, faults, scenario and clock
        back to the start."""
        return cast(ResetResult, self.call("POST", "/_emulator/reset"))

    # --- the clock ----------------------------------------------------------------------------

    def clock(self) -> Clock:
        """The tenant's clock."""
        return cast(Clock, self.call("GET", "/_emulator/clock"))

    def now(self) -> _dt.datetime:
        """The tenant's time, as an aware datetime."""
        return parse_time(self.clock()["now"])

    def advance(self, by: Duration) -> Clock:
        """Moves the clock forward; returns once everything that fell due has happened."""
        return cast(Clock, self.call("POST", "/_emulator/clock", {"advance": duration_text(by)}))

    def set_time(self, when: Union[str, _dt.datetime]) -> Clock:
        """Moves the clock forward to a given time (it never moves back)."""
        return cast(Clock, self.call("POST", "/_emulator/clock", {"set": time_text(when)}))

    def wait_for_waiting(self, count: int = 1, timeout: float = 10.0) -> int:
        """Blocks until at least `count` wait=true generations of the tenant are waiting on
        their jobs, so that a clock advance is sure to be seen by them; returns how many wait.
        Raises EmulatorTimeout after `timeout` real seconds."""
        try:
            got = self.call("GET", "/_emulator/waiting", query={"count": count, "timeout": duration_text(timeout)},
                            timeout=timeout + 30)
        except EmulatorError as err:
            if err.status not in (404, 405):
                raise
            return self._poll_waiting(count, timeout)  # an emulator without /_emulator/waiting
        if not got.get("reached"):
            raise EmulatorTimeout("%d wait=true generation(s) waiting after %gs; wanted %d" % (got.get("waiting", 0), timeout, count))
        return int(got["waiting"])

    def _poll_waiting(self, count: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        pause = 0.002
        while True:
            n = int(self.health().get("waiting", 0))
            if n >= count:
                return n
            if time.monotonic() >= deadline:
                raise EmulatorTimeout("%d wait=true generation(s) waiting after %gs; wanted %d" % (n, timeout, count))
            time.sleep(pause)  # real time: another thread's request is on its way
            pause = min(pause * 2, 0.05)

    # --- jobs ---------------------------------------------------------------------------------

    def complete_job(self, job_id: str) -> Job:
        """Makes a job succeed now, with real outputs."""
        return cast(Job, self.call("POST", "/_emulator/jobs/%s/complete" % urllib.parse.quote(job_id, safe="")))

    def fail_job(self, job_id: str, code: Optional[str] = None, message: Optional[str] = None) -> Job:
        """Makes a job fail now, with an error code (default generation_failed) and message."""
        body = {k: v for k, v in (("code", code), ("message", message)) if v is not None}
        return cast(Job, self.call("POST", "/_emulator/jobs/%s/fail" % urllib.parse.quote(job_id, safe=""), body or None))

    # --- faults -------------------------------------------------------------------------------

    def faults(self) -> List[Fault]:
        """The fault rules in force, the scenario's included."""
        return cast(List[Fault], self.call("GET", "/_emulator/faults")["data"])

    def add_fault(self, fault: Optional[FaultSpec] = None, **fields: Any) -> Fault:
        """Adds a fault rule, given as a dict, as keywords, or both (keywords win):
        add_fault(match={"path": "/v1/models"}, status=503, count=1). A timedelta or a number
        of seconds is accepted for `delay`."""
        spec: Dict[str, Any] = dict(fault or {})
        spec.update(fields)
        if "delay" in spec and not isinstance(spec["delay"], str):
            spec["delay"] = duration_text(spec["delay"])
        return cast(Fault, self.call("POST", "/_emulator/faults", spec))

    def delete_fault(self, fault_id: str) -> None:
        """Removes one fault rule."""
        self.call("DELETE", "/_emulator/faults/%s" % urllib.parse.quote(fault_id, safe=""))

    def clear_faults(self, include_scenario: bool = False) -> None:
        """Removes the faults added through the API (and the scenario's, when asked)."""
        self.call("DELETE", "/_emulator/faults", query={"source": "all" if include_scenario else None})

    # --- scenario -----------------------------------------------------------------------------

    def scenario(self) -> Scenario:
        """The scenario in force and the names of the embedded ones."""
        return cast(Scenario, self.call("GET", "/_emulator/scenario"))

    def set_scenario(self, name: Optional[str] = None, *, document: Optional[Mapping[str, Any]] = None) -> Scenario:
        """Switches the scenario: an embedded one by name, or a whole scenario document."""
        if (name is None) == (document is None):
            raise ValueError("give a scenario name or a document, not both")
        body = {"name": name} if name is not None else {"scenario": dict(document or {})}
        return cast(Scenario, self.call("PUT", "/_emulator/scenario", body))

    # --- accounts -----------------------------------------------------------------------------

    def accounts(self) -> List[Balance]:
        """Every account's available, held, charged and refunded credits."""
        return cast(List[Balance], self.call("GET", "/_emulator/accounts")["data"])

    def balance(self, account: str) -> Balance:
        """One account's credits; KeyError when there is no such account."""
        for b in self.accounts():
            if b["account"] == account:
                return b
        raise KeyError(account)

    def set_credits(self, account: str, credits: int) -> Balance:
        """Sets what an account can spend now; held and charged credits stay."""
        return cast(Balance, self.call("PUT", "/_emulator/accounts/%s" % urllib.parse.quote(account, safe=""),
                                       {"credits": credits}))

    # --- the journal --------------------------------------------------------------------------

    def requests(self, *, method: Optional[str] = None, path: Optional[str] = None, status: Optional[int] = None,
                 code: Optional[str] = None, account: Optional[str] = None, model: Optional[str] = None,
                 limit: Optional[int] = None, offset: Optional[int] = None) -> List[JournalEntry]:
        """The /v1 requests the tenant received, oldest first; `path` may end in `*`."""
        query = {"method": method, "path": path, "status": status, "code": code, "account": account,
                 "model": model, "limit": limit, "offset": offset}
        return cast(List[JournalEntry], self.call("GET", "/_emulator/requests", query=query)["data"])

    def clear_requests(self) -> None:
        """Empties the tenant's journal."""
        self.call("DELETE", "/_emulator/requests")

    # --- tenants ------------------------------------------------------------------------------

    def tenants(self) -> List[TenantInfo]:
        """Every live tenant of the emulator (whichever tenant this client acts on)."""
        return cast(List[TenantInfo], self.call("GET", "/_emulator/tenants")["data"])

    def delete_tenant(self, name: str, missing_ok: bool = False) -> None:
        """Drops a tenant and everything in it; the default tenant cannot be dropped."""
        try:
            self.call("DELETE", "/_emulator/tenants/%s" % urllib.parse.quote(name, safe=""))
        except EmulatorError as err:
            if not (missing_ok and err.status == 404):
                raise
