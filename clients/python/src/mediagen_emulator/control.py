"""A typed client for the emulator's control API (/_emulator/...), bound to one tenant."""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union, cast

from .types import (Balance, Bundle, Clock, ControlJob, ControlUpload, Coverage, Drawn, Fault, FaultSpec, Health, Job, JournalEntry, Plan,
                    PlanInForce, Problem, Report, RequestPattern, ResetResult, Scenario, Snapshot, SnapshotResult,
                    TenantInfo, UnexpectedError, Verdict, Verification, WebhookAttempt, WebhookChaos, Webhooks)

if TYPE_CHECKING:
    from .webhooks import WebhookReceiver

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
        errors = problem.get("errors")
        if isinstance(errors, list) and len(errors) > 1:  # the detail names only the first
            text += "".join("\n  %s: %s" % (e.get("pointer") or e.get("parameter") or "", e.get("message"))
                            for e in errors if isinstance(e, dict))
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
                 timeout: float = 60.0, clock_mode: Optional[str] = None):
        self.base_url = base_url.rstrip("/")
        self.tenant = tenant
        self.admin_token = admin_token
        self.timeout = timeout
        #: The clock mode `reset` puts the tenant back on: the one the helper gave the tenant (the
        #: `mediagen` fixture sets it). None: the emulator's configured mode, as the endpoint does.
        #: A reset must not take a test from the skip clock it had locally to the manual clock a
        #: CI emulator is configured with.
        self.clock_mode = clock_mode

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
        an empty one). A list or tuple in `query` repeats its parameter."""
        raw = self.raw(method, path, body, query, timeout)
        return json.loads(raw) if raw else None

    def raw(self, method: str, path: str, body: Any = None, query: Optional[Mapping[str, Any]] = None,
            timeout: Optional[float] = None, data: Optional[bytes] = None) -> bytes:
        """Sends one request to the control API and returns the answer's bytes. `data`, when
        given, is sent as the JSON body as it is, instead of `body` encoded."""
        url = self.base_url + path
        if query:
            params = {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items()
                      if v is not None and v != [] and v != ()}
            if params:
                url += "?" + urllib.parse.urlencode(params, doseq=True)
        headers = self.headers
        if data is None and body is not None:
            data = json.dumps(body).encode()
        if data is not None:
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
        return raw

    # --- health and reset --------------------------------------------------------------------

    def health(self) -> Health:
        """The emulator's version, clock, scenario and how many wait=true requests wait."""
        return cast(Health, self.call("GET", "/_emulator/health"))

    def reset(self) -> ResetResult:
        """Puts the tenant's quotes, jobs, keys, balances, journal, faults, scenario and clock
        back to the start; the clock's mode back to `clock_mode` when it is set (the mode the
        `mediagen` fixture gave the tenant), else to the emulator's configured mode."""
        done = cast(ResetResult, self.call("POST", "/_emulator/reset"))
        if self.clock_mode:
            self.set_clock_mode(self.clock_mode)
        return done

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

    def set_clock_mode(self, mode: str) -> Clock:
        """Changes how the tenant's clock moves from now on: "skip" (still, but a request that
        waits on a job moves it to the job's next transition), "manual" (still until advanced)
        or "real". Time goes on from where it stands; a reset puts the emulator's mode back."""
        return cast(Clock, self.call("POST", "/_emulator/clock", {"mode": mode}))

    def clock_diagnosis(self) -> Optional[str]:
        """Why the tenant's wait=true generations did not end, when its clock is manual and one
        of them answered 202 (it ran out of time) or still waits: a sentence that names the clock
        and how to move it, for a failed test's report. None otherwise (a skipping clock never
        leaves a wait=true waiting; a real one moves by itself)."""
        if self.clock().get("mode") != "manual":
            return None
        waiting = int(self.health().get("waiting") or 0)
        cut = [e for e in self.requests(method="POST", path="/v1/generate", status=202)
               if "wait=true" in (e.get("query") or "").split("&")]
        if not waiting and not cut:
            return None
        seen = []
        if cut:
            seen.append("%d wait=true generation%s answered 202, the job not finished (%s)" % (
                len(cut), "" if len(cut) == 1 else "s", ", ".join("#%s" % e["seq"] for e in cut[:5])))
        if waiting:
            seen.append("%d still wait%s" % (waiting, "s" if waiting == 1 else ""))
        return ("the tenant %s is on a manual clock: time stands still until the test moves it, so a wait=true "
                "generation waits for its job until --max-wait (180 s by default) passes in real time, then answers "
                "202 with the job still queued; here %s. Move the clock (control.advance(\"5m\"), after "
                "control.wait_for_waiting() for a wait already sent), or put the tenant on the skip clock, where a "
                "wait=true answers the finished job at once: control.set_clock_mode(\"skip\"), "
                "@pytest.mark.mediagen_clock(\"skip\")" % (self.tenant or "default", " and ".join(seen)))

    def wait_for_waiting(self, count: int = 1, timeout: float = 10.0) -> int:
        """Blocks until at least `count` wait=true generations of the tenant are waiting on
        their jobs, so that a clock advance is sure to be seen by them; returns how many wait.
        Raises EmulatorTimeout after `timeout` real seconds, and RuntimeError at once on a
        skipping clock, where a wait=true never waits."""
        if self.clock().get("mode") == "skip":
            raise RuntimeError("the tenant's clock skips, so a wait=true answers at once and never waits; start the "
                               "emulator with clock=\"manual\" or call set_clock_mode(\"manual\") first")
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

    def job(self, job_id: str) -> ControlJob:
        """Any account's job with its account, its plan and, with inputs fetched, its media_inputs:
        how each media input was read (source, read) and what it decoded to."""
        return cast(ControlJob, self.call("GET", "/_emulator/jobs/%s" % urllib.parse.quote(job_id, safe="")))

    def uploads(self, limit: int = 100, offset: int = 0) -> List[ControlUpload]:
        """The tenant's live uploads, newest first, each with the jobs that read it."""
        return cast(List[ControlUpload], self.call("GET", "/_emulator/uploads?limit=%d&offset=%d" % (limit, offset))["data"])

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

    # --- adversity plans and explore ----------------------------------------------------------

    def set_plan(self, plan: Mapping[str, Any]) -> PlanInForce:
        """Puts an adversity plan ({"perturbations": [...]}, or a bundle, whose plan is taken) in
        force for the tenant, in place of the perturbations added through the API; returns every
        perturbation in force, the scenario's too."""
        if "perturbations" not in plan and isinstance(plan.get("plan"), Mapping):
            plan = plan["plan"]
        return cast(PlanInForce, self.call("PUT", "/_emulator/plan", dict(plan)))

    def plan(self) -> PlanInForce:
        """Every perturbation in force for the tenant, the scenario's and the API's."""
        return cast(PlanInForce, self.call("GET", "/_emulator/plan"))

    def clear_plan(self) -> None:
        """Removes the perturbations added through the API (a plan, faults)."""
        self.raw("DELETE", "/_emulator/plan")

    def verdict(self, exit: Optional[int] = None) -> Verdict:
        """Whether a run of the client in the tenant failed, and why: an error-severity finding of
        the report, a broken ledger invariant, or (when `exit` is given) a non-zero exit status.
        Also the coverage cases the run reached and its requests per route, for the next draw."""
        return cast(Verdict, self.call("GET", "/_emulator/verdict", query={"exit": exit}))

    def bundle(self, seed: int, run: Optional[int] = None, exit: Optional[int] = None) -> Bundle:
        """What replays the tenant's run and shows what happened in it: the plan in force, the
        seed and run, the verdict, the report and the tenant's snapshot."""
        return cast(Bundle, self.call("GET", "/_emulator/bundle", query={"seed": seed, "run": run, "exit": exit}))

    def draw(self, seed: int, run: int, terminal: bool = False, reached: Sequence[str] = (),
             routes: Optional[Mapping[str, int]] = None) -> Drawn:
        """The adversity plan the emulator draws for run `run` of seed `seed` ({"plan", "log"}),
        favouring the cases earlier runs did not reach; the same arguments draw the same plan."""
        body: Dict[str, Any] = {"seed": seed, "run": run}
        if terminal:
            body["terminal"] = True
        if reached:
            body["reached"] = sorted(set(reached))
        if routes:
            body["routes"] = dict(routes)
        return cast(Drawn, self.call("POST", "/_emulator/explore/draw", body))

    def shrink(self, plan: Mapping[str, Any]) -> List[Plan]:
        """The plans one step smaller than a failing plan, the most promising first; empty when it
        cannot shrink."""
        return cast(List[Plan], self.call("POST", "/_emulator/explore/shrink", {"plan": dict(plan)})["candidates"])

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
        """The /v1 requests the tenant received, oldest first; `path` and `model` are globs (`*` within a segment, `**` across)."""
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

    # --- snapshots ----------------------------------------------------------------------------

    def snapshot(self, journal: bool = False) -> Snapshot:
        """The tenant's whole world as one document (GET /_emulator/snapshot): clock, accounts,
        quotes, jobs with their plans, keys, faults, scenario, and the journal when asked.
        `restore`, the emulator's --state flag or the dashboard put it back."""
        return cast(Snapshot, self.call("GET", "/_emulator/snapshot", query={"journal": True if journal else None}))

    def restore(self, doc: Union[Mapping[str, Any], bytes, str, "os.PathLike[str]"]) -> SnapshotResult:
        """Replaces the tenant's world with a snapshot, at once: a dict (as `snapshot` returns),
        the document as bytes or text, or the path of a file holding it (a str that does not
        start with "{"). A document the emulator refuses
        (422 invalid_snapshot) changes nothing; the EmulatorError names each problem with its
        JSON Pointer."""
        if isinstance(doc, (bytes, bytearray)):
            data = bytes(doc)
        elif isinstance(doc, str) and doc.lstrip().startswith("{"):
            data = doc.encode()
        elif isinstance(doc, (str, os.PathLike)):
            with open(doc, "rb") as f:
                data = f.read()
        elif isinstance(doc, Mapping):
            data = json.dumps(doc).encode()
        else:
            raise TypeError("restore takes a snapshot as a dict, bytes, or a file's path, not %s" % type(doc).__name__)
        return cast(SnapshotResult, json.loads(self.raw("PUT", "/_emulator/snapshot", data=data)))

    def save_snapshot(self, directory: Union[str, "os.PathLike[str]"], name: str = "snapshot", journal: bool = True) -> str:
        """Writes the tenant's snapshot (with the journal, by default) to a new file
        NAME-XXXXXXXX.json in `directory`, made if missing, and returns its path. The random part
        keeps one run from overwriting another's."""
        data = self.raw("GET", "/_emulator/snapshot", query={"journal": True if journal else None})
        os.makedirs(directory, exist_ok=True)
        fd, path = tempfile.mkstemp(prefix=_file_name(name) + "-", suffix=".json", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except BaseException:
            os.unlink(path)
            raise
        return path

    # --- verification, expected errors ----------------------------------------------------------

    def verify(self, pattern: Optional[RequestPattern] = None, **fields: Any) -> Verification:
        """How many of the tenant's /v1 requests match a pattern, given as a dict, as keywords,
        or both (keywords win): verify(method="POST", path="/v1/generate", status=202,
        headers={"Idempotency-Key": "k1"}, body={"model": "m"}, pointers={"/input/prompt": "a cat"}).
        With no match, `near_misses` holds the closest entries and what each one missed."""
        return cast(Verification, self.call("POST", "/_emulator/verify", _pattern(pattern, fields)))

    def assert_requested(self, times: Optional[int] = None, pattern: Optional[RequestPattern] = None,
                         **fields: Any) -> Verification:
        """Asserts that requests matching the pattern happened `times` times (at least once when
        None); the AssertionError lists the matches, or the near misses and what they missed."""
        want = _pattern(pattern, fields)
        got = self.verify(want)
        count = int(got["count"])
        if (count >= 1) if times is None else (count == times):
            return got
        raise AssertionError(format_verification(want, got, times))

    def expect_error(self, pattern: Optional[RequestPattern] = None, **fields: Any) -> List[RequestPattern]:
        """Declares errors the tenant's requests may answer without being "unexpected" (a
        pattern as for verify, e.g. status=402, code="insufficient_credits"); returns every
        pattern declared. Reset clears them."""
        return cast(List[RequestPattern], self.call("POST", "/_emulator/expected-errors", _pattern(pattern, fields))["data"])

    def expected_errors(self) -> List[RequestPattern]:
        """The patterns of the errors declared expected."""
        return cast(List[RequestPattern], self.call("GET", "/_emulator/expected-errors")["data"])

    def clear_expected_errors(self) -> None:
        """Forgets every expected-error pattern of the tenant."""
        self.call("DELETE", "/_emulator/expected-errors")

    def unexpected_errors(self) -> List[UnexpectedError]:
        """The tenant's /v1 answers with status >= 400 that no expected pattern matches, oldest
        first, each with its journal entry and the problem's detail."""
        return cast(List[UnexpectedError], self.call("GET", "/_emulator/unexpected")["data"])

    def assert_no_unexpected(self) -> None:
        """Asserts the tenant answered no unexpected error; the AssertionError shows each such
        request with its bodies and the problem's detail."""
        got = self.call("GET", "/_emulator/unexpected")
        if got["data"]:
            raise AssertionError(format_unexpected(got["data"], int(got.get("total", len(got["data"]))), self.tenant))

    # --- coverage and report --------------------------------------------------------------------

    def coverage(self, scope: str = "tenant", require: Sequence[str] = ()) -> Coverage:
        """Which of the contract's cases were exercised, by this tenant (scope="tenant") or by
        every tenant since the emulator started (scope="run"); `required_missing` lists the
        cases that match a `require` glob ("job failed *") and were never exercised."""
        return cast(Coverage, self.call("GET", "/_emulator/coverage", query={"scope": scope, "require": _globs(require)}))

    def coverage_markdown(self, scope: str = "run", require: Sequence[str] = ()) -> str:
        """The coverage as a markdown table, for a CI job summary."""
        return self.raw("GET", "/_emulator/coverage",
                        query={"scope": scope, "require": _globs(require), "format": "markdown"}).decode("utf-8")

    def report(self, scope: str = "tenant") -> Report:
        """What the emulator found wrong in the client's behaviour (retries with a new
        Idempotency-Key, Retry-After ignored, polling too fast, ...), for this tenant or for
        the whole run."""
        return cast(Report, self.call("GET", "/_emulator/report", query={"scope": scope}))

    def report_markdown(self, scope: str = "run") -> str:
        """The report as markdown, for a CI job summary."""
        return self.raw("GET", "/_emulator/report", query={"scope": scope, "format": "markdown"}).decode("utf-8")

    # --- webhooks -----------------------------------------------------------------------------

    def set_webhook(self, url: str, secret: str, events: Optional[Sequence[str]] = None, audit: bool = False,
                    chaos: Optional[WebhookChaos] = None) -> Webhooks:
        """Puts the tenant's webhook in force: its job events (by default a job's end) are POSTed
        to url, signed with secret (whsec_ and base64) as Standard Webhooks do."""
        body: Dict[str, Any] = {"url": url, "secret": secret, "audit": audit}
        if events is not None:
            body["events"] = list(events)
        if chaos is not None:
            body["chaos"] = dict(chaos)
        return cast(Webhooks, self.call("PUT", "/_emulator/webhooks", body))

    def webhooks(self) -> Webhooks:
        """The tenant's webhook (its secret never shown) and its deliveries' summary."""
        return cast(Webhooks, self.call("GET", "/_emulator/webhooks"))

    def delete_webhook(self) -> None:
        """Turns the tenant's webhook off; deliveries still due are dropped."""
        self.raw("DELETE", "/_emulator/webhooks")

    def webhook_deliveries(self) -> List[WebhookAttempt]:
        """Every attempt of the tenant's deliveries, oldest first."""
        return cast(List[WebhookAttempt], self.call("GET", "/_emulator/webhooks/deliveries")["data"])

    def webhook_receiver(self, events: Optional[Sequence[str]] = None, audit: bool = False,
                         chaos: Optional[WebhookChaos] = None) -> "WebhookReceiver":
        """Starts a WebhookReceiver on loopback that checks timestamps against this tenant's clock,
        and points the tenant's webhook at it. Close it when done (it is a context manager)."""
        from .webhooks import WebhookReceiver
        receiver = WebhookReceiver(now=self.now)
        try:
            self.set_webhook(receiver.url, receiver.secret, events=events, audit=audit, chaos=chaos)
        except BaseException:
            receiver.close()
            raise
        return receiver


def _file_name(name: str) -> str:
    """A test's name as part of a file name: letters, digits, _ and - kept, the rest _."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in name)[:100] or "snapshot"


def _pattern(pattern: Optional[Mapping[str, Any]], fields: Mapping[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = dict(pattern or {})
    out.update(fields)
    return out


def _globs(require: Union[str, Sequence[str]]) -> List[str]:
    return [require] if isinstance(require, str) else list(require)


def _json(v: Any, limit: int = 2000) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= limit else text[:limit] + "…"


def _value(v: Any, limit: int = 200) -> str:
    text = json.dumps(v, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= limit else text[:limit] + "…"


def _describe_pattern(pattern: Mapping[str, Any]) -> str:
    if not pattern:
        return "any request"
    return " ".join("%s=%s" % (k, v if isinstance(v, (str, int)) and not isinstance(v, bool) else _json(v))
                    for k, v in pattern.items())


def _entry_line(e: Mapping[str, Any]) -> str:
    line = "#%s %s %s%s -> %s" % (e.get("seq"), e.get("method"), e.get("path"),
                                  "?" + e["query"] if e.get("query") else "", e.get("status"))
    if e.get("code"):
        line += " " + e["code"]
    return line


def format_verification(pattern: Mapping[str, Any], got: Mapping[str, Any], times: Optional[int] = None) -> str:
    """The message of a failed assert_requested: what was wanted, what matched, and for no
    match the near misses, one line per part of the pattern each one missed."""
    count = int(got.get("count", 0))
    want = "at least 1" if times is None else str(times)
    lines = ["expected %s request%s matching %s; %d matched" % (want, "" if times in (None, 1) else "s",
                                                               _describe_pattern(pattern), count)]
    if count:
        seqs = [str(s) for s in got.get("matches") or []]
        lines.append("  matching journal entries: #" + ", #".join(seqs) + (" …" if count > len(seqs) else ""))
    misses = got.get("near_misses") or []
    if misses:
        lines.append("near misses (closest first):")
        for m in misses:
            lines.append("  " + _entry_line(m.get("entry") or {}))
            for miss in m.get("missed") or []:
                got_value = miss.get("got")
                lines.append("      %s: want %s, got %s" % (miss.get("field"), _value(miss.get("want")),
                                                          "nothing" if got_value is None else _value(got_value)))
    elif not count:
        lines.append("the tenant's journal holds no request close to it")
    return "\n".join(lines)


def format_unexpected(items: Sequence[Mapping[str, Any]], total: Optional[int] = None, tenant: Optional[str] = None) -> str:
    """The message of a failed assert_no_unexpected: each request with its bodies and the
    problem's detail."""
    total = len(items) if total is None else total
    where = " in tenant %s" % tenant if tenant else ""
    lines = ["%d unexpected error%s%s (declare the expected ones with expect_error):" % (total, "" if total == 1 else "s", where)]
    for item in items:
        e = item.get("entry") or {}
        lines.append("  " + _entry_line(e) + (": " + item["detail"] if item.get("detail") else ""))
        if "request_body" in e:
            lines.append("      request:  " + _json(e["request_body"]))
        if "response_body" in e:
            lines.append("      response: " + _json(e["response_body"]))
    if total > len(items):
        lines.append("  … and %d more" % (total - len(items)))
    return "\n".join(lines)
