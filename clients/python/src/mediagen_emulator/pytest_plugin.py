"""pytest fixtures for mediagen-emulator.

- ``mediagen_server`` (session): one emulator for the test run. It attaches to
  ``--mediagen-url`` / $MEDIAGEN_EMULATOR_URL when given, else starts the binary
  (``--mediagen-bin``, $MEDIAGEN_EMULATOR_BIN, the wheel's own, or PATH) with a skipping clock. Override the
  session fixture ``mediagen_server_options`` to pass other ``Emulator.start`` options. Under
  pytest-xdist each worker starts its own emulator, unless ``--mediagen-shared`` makes the
  controller start one for all workers, or a URL is given.
- ``mediagen`` (function): a fresh tenant of that emulator for one test, named after it, with
  ``base_url``, ``api_key`` (``mg_test_all.<tenant>``), ``headers`` and ``control``; deleted
  after the test. Skips the test when the emulator does not know tenants. Its clock skips,
  whatever the emulator's own (one in CI may run ``--clock manual``), unless
  ``@pytest.mark.mediagen_clock("manual")`` or ``mediagen_server_options``' ``clock`` says
  otherwise. A failed test whose tenant's wait=true generations ran out of time on a manual clock
  says so in its report (section ``mediagen-emulator clock``).

What the run proved (a test's unexpected errors, the run's coverage of the contract's cases, the
report on the client's behaviour) comes from options, each also an ini setting:

- ``--mediagen-fail-on-unexpected``: a test that passed fails when its tenant answered an error
  no ``expect_error`` pattern (or ``@pytest.mark.mediagen_expect_error(...)``) declared.
- ``--mediagen-coverage``, ``--mediagen-require GLOB``: the run's coverage in the terminal
  summary; the run fails when a required case was never exercised.
- ``--mediagen-report``, ``--mediagen-fail-on-rule RULE``: the run's report in the terminal
  summary; the run fails on findings of the chosen rules (ids, globs, or a severity).
- ``--mediagen-summary-file PATH``: both in markdown, appended to PATH ($GITHUB_STEP_SUMMARY).
- ``--mediagen-snapshot-on-failure DIR`` (or $MEDIAGEN_SNAPSHOT_DIR): a failed test's tenant
  is saved to a snapshot file in DIR before it is deleted, and the test's report names the file.

They read the emulator's whole-run counts (scope=run) once, from the process that owns the
terminal: under pytest-xdist they make the controller start one emulator for every worker, as
``--mediagen-shared`` does, unless a URL is given.

Explore (see docs/explore.md): ``--mediagen-explore=N`` runs each test marked
``@pytest.mark.mediagen_explore`` N times, each run in a fresh tenant under an adversity plan the
emulator draws (``--mediagen-explore-seed``, default 1) and judged by its verdict (the test's own
failure counts as exit status 1); a failure is shrunk to the smallest plan that still fails, its
bundle written to ``--mediagen-explore-out`` (default ``mediagen-explore``), and the test fails
with a message naming the file. ``--mediagen-plan=FILE`` runs the marked tests once under a
bundle's plan. The test must take the ``mediagen`` fixture; fixtures built on it are made again
for every run.

When $MEDIAGEN_TENANT (or a $MEDIAGEN_API_KEY of the form KEY.TENANT) is set, as
``mediagen-emulator explore`` and ``conformance`` set it for their command, the ``mediagen``
fixture gives every test that tenant, with that key, and neither changes its clock nor deletes it.

Installed, the plugin loads itself (entry point ``pytest11``); from a checkout, use
``PYTHONPATH=clients/python/src python -m pytest -p mediagen_emulator.pytest_plugin``.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import pytest

from _pytest.runner import CallInfo, runtestprotocol

from .control import EmulatorError, format_unexpected
from .explore import Explorer, Found, Run, describe, failure_lines, read_plan, write_bundle
from .server import ADMIN_TOKEN_ENV, KEY_ENV, TENANT_ENV, URL_ENV, Emulator, Tenant

_SHARED_URL = "mediagen_emulator_url"
_SHARED_TOKEN = "mediagen_emulator_admin_token"
_EXPECT_MARK = "mediagen_expect_error"
_CLOCK_MARK = "mediagen_clock"
_EXPLORE_MARK = "mediagen_explore"
#: Where failed tests' snapshots go when no option names a folder, as for emulatortest.
SNAPSHOT_DIR_ENV = "MEDIAGEN_SNAPSHOT_DIR"
_SEVERITIES = {"info": 0, "warning": 1, "error": 2}
# Beyond this many lines a section prints its head and says how to see the rest (-v).
_QUIET_LINES = 40


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mediagen_emulator", "mediagen-emulator")
    group.addoption("--mediagen-bin", default=None, help="the mediagen-emulator binary to start (default: $MEDIAGEN_EMULATOR_BIN, then the one installed with this package, then PATH)")
    group.addoption("--mediagen-url", default=None, help="attach to the emulator at this URL instead of starting one (default: $MEDIAGEN_EMULATOR_URL)")
    group.addoption("--mediagen-shared", action="store_true", default=False,
                    help="with pytest-xdist, start one emulator in the controller and let every worker use it (each test has its own tenant)")
    group.addoption("--mediagen-fail-on-unexpected", action="store_true", default=None,
                    help="fail a test at its end when its tenant answered an error it did not declare expected (ini: mediagen_fail_on_unexpected)")
    group.addoption("--mediagen-coverage", action="store_true", default=None,
                    help="print which of the contract's cases the run exercised (-v: every case) (ini: mediagen_coverage)")
    group.addoption("--mediagen-require", action="append", default=None, metavar="GLOB",
                    help="fail the run when a case matching GLOB was never exercised, e.g. 'job failed *'; repeatable (ini: mediagen_require, one per line)")
    group.addoption("--mediagen-report", action="store_true", default=None,
                    help="print the emulator's report on the client's behaviour for the run (ini: mediagen_report)")
    group.addoption("--mediagen-fail-on-rule", action="append", default=None, metavar="RULE",
                    help="fail the run when the report has findings of RULE: a rule id, a glob, or a severity "
                         "(error, warning, info: that severity or worse); repeatable (ini: mediagen_fail_on_rule)")
    group.addoption("--mediagen-summary-file", default=None, metavar="PATH",
                    help="append the run's coverage and report in markdown to PATH, e.g. \"$GITHUB_STEP_SUMMARY\" (ini: mediagen_summary_file; $VARIABLES expanded)")
    group.addoption("--mediagen-snapshot-on-failure", default=None, metavar="DIR",
                    help="save the snapshot of a failed test's tenant to a file in DIR and name it in the test's report "
                         "(ini: mediagen_snapshot_on_failure; default: $%s)" % SNAPSHOT_DIR_ENV)
    group.addoption("--mediagen-explore", type=int, default=0, metavar="N",
                    help="run each test marked mediagen_explore N times, each in a fresh tenant under an adversity plan "
                         "the emulator draws; shrink a failure and write its bundle (docs/explore.md)")
    group.addoption("--mediagen-explore-seed", type=int, default=1, metavar="S",
                    help="the seed the explore plans are drawn from (default 1): the same seed draws the same plans")
    group.addoption("--mediagen-explore-out", default="mediagen-explore", metavar="DIR",
                    help="where explore writes the bundle of a failure (default: mediagen-explore)")
    group.addoption("--mediagen-plan", default=None, metavar="FILE",
                    help="run each test marked mediagen_explore once under the plan of a bundle (or plan) file")
    parser.addini("mediagen_snapshot_on_failure", "as --mediagen-snapshot-on-failure", default="")
    parser.addini("mediagen_fail_on_unexpected", "as --mediagen-fail-on-unexpected", type="bool", default=False)
    parser.addini("mediagen_coverage", "as --mediagen-coverage", type="bool", default=False)
    parser.addini("mediagen_require", "as --mediagen-require, one glob per line", type="linelist", default=[])
    parser.addini("mediagen_report", "as --mediagen-report", type="bool", default=False)
    parser.addini("mediagen_fail_on_rule", "as --mediagen-fail-on-rule, one per line", type="linelist", default=[])
    parser.addini("mediagen_summary_file", "as --mediagen-summary-file", default="")


def _flag(config: pytest.Config, name: str) -> bool:
    given = config.getoption(name)
    return bool(config.getini(name)) if given is None else bool(given)


def _list(config: pytest.Config, name: str) -> List[str]:
    given = config.getoption(name)
    return list(given) if given else [v for v in config.getini(name) if v.strip()]


def _summary_file(config: pytest.Config) -> str:
    path = config.getoption("mediagen_summary_file") or os.path.expandvars(config.getini("mediagen_summary_file") or "")
    # An ini file naming $GITHUB_STEP_SUMMARY is read outside CI too, where it means nothing.
    return "" if path.startswith("$") else path


def _snapshot_dir(config: pytest.Config) -> str:
    """Where failed tests' snapshots go; empty when they are not saved."""
    return (config.getoption("mediagen_snapshot_on_failure") or os.path.expandvars(config.getini("mediagen_snapshot_on_failure") or "")
            or os.environ.get(SNAPSHOT_DIR_ENV, ""))


def _run_wanted(config: pytest.Config) -> bool:
    """Whether an option asks for the run's coverage or report."""
    return (_flag(config, "mediagen_coverage") or _flag(config, "mediagen_report") or bool(_list(config, "mediagen_require"))
            or bool(_list(config, "mediagen_fail_on_rule")) or bool(_summary_file(config)))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _url(config: pytest.Config) -> str:
    return config.getoption("mediagen_url") or os.environ.get(URL_ENV, "")


def _xdist_workers(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and getattr(config.option, "dist", "no") != "no"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _EXPECT_MARK + "(**pattern): an error the test's `mediagen` tenant may answer "
                            "without it being unexpected, e.g. status=402, code='insufficient_credits'; repeatable")
    config.addinivalue_line("markers", _CLOCK_MARK + "(mode): the clock mode of the test's `mediagen` tenant: "
                            "'manual' for a test that looks at a job while it is queued or running, 'skip' or 'real'")
    config.addinivalue_line("markers", _EXPLORE_MARK + ": with --mediagen-explore=N, run the test N times, each in a fresh "
                            "`mediagen` tenant under an adversity plan the emulator draws; with --mediagen-plan=FILE, once "
                            "under that plan")
    # The xdist controller starts the shared emulator before any worker exists. The run's
    # coverage and report need one emulator that saw every test, read from the controller.
    if ((config.getoption("mediagen_shared") or _run_wanted(config)) and not _is_worker(config)
            and _xdist_workers(config) and not _url(config)):
        config._mediagen_shared = Emulator.start(config.getoption("mediagen_bin"))  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    emu = getattr(config, "_mediagen_shared", None)
    if emu is not None:
        code = emu.close()
        if code != 0:
            raise RuntimeError("the shared emulator exited with %s (log: %s)" % (code, emu.log_path))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: hands the shared emulator's address to each worker."""
    emu = getattr(node.config, "_mediagen_shared", None)
    if emu is not None:
        node.workerinput[_SHARED_URL] = emu.url
        node.workerinput[_SHARED_TOKEN] = emu.admin_token or ""


@pytest.fixture(scope="session")
def mediagen_server_options() -> Dict[str, Any]:
    """Keyword arguments for Emulator.start when the session starts its own emulator (seed,
    clock, scenario, catalog, admin_token, args, env). Override it in a conftest.py."""
    return {}


@pytest.fixture(scope="session")
def mediagen_server(request: pytest.FixtureRequest, mediagen_server_options: Dict[str, Any]) -> Iterator[Emulator]:
    """The emulator of the whole test run, started or attached."""
    config = request.config
    shared = getattr(config, "workerinput", {}).get(_SHARED_URL)
    if _url(config):
        # Not started here, so its tenants are put on the clock a started one would have.
        emu = Emulator.attach(_url(config), clock=mediagen_server_options.get("clock", "skip"))
    elif shared:
        emu = Emulator(shared, getattr(config, "workerinput", {}).get(_SHARED_TOKEN) or os.environ.get(ADMIN_TOKEN_ENV) or None)
    else:
        options = dict(mediagen_server_options)
        options.setdefault("binary", config.getoption("mediagen_bin"))
        emu = Emulator.start(**options)
    config._mediagen_server = emu  # type: ignore[attr-defined]
    yield emu
    if not _is_worker(config):
        _collect_run(config, emu)  # while it still runs
    code = emu.close()
    if code not in (None, 0):
        raise RuntimeError("the emulator exited with %s after SIGTERM (log: %s)" % (code, emu.log_path))


@pytest.fixture
def mediagen(request: pytest.FixtureRequest, mediagen_server: Emulator) -> Iterator[Tenant]:
    """A tenant of its own for one test, deleted afterwards."""
    if not mediagen_server.supports_tenants():
        pytest.skip("the emulator at %s does not support tenants (GET /_emulator/tenants answered 404); "
                    "use a newer mediagen-emulator" % mediagen_server.url)
    mark = request.node.get_closest_marker(_CLOCK_MARK)
    clock = mediagen_server.tenant_clock
    if mark is not None:
        clock = mark.args[0] if mark.args else mark.kwargs.get("mode")
    explore = getattr(request.node, "_mediagen_explore", None)
    given = _given_tenant(mediagen_server.url)
    if given and explore is None:
        # Explore or conformance made this tenant for the run and put its plan in force: use it
        # as it is, and leave it for them to judge.
        tenant = mediagen_server.tenant(given[0])
        if given[1]:
            tenant.api_key = given[1]
        if mark is not None:
            tenant.control.set_clock_mode(clock)
            tenant.control.clock_mode = clock
        for m in request.node.iter_markers(_EXPECT_MARK):
            tenant.control.expect_error(*m.args, **m.kwargs)
        yield tenant
        return
    hint = request.node.name if explore is None else "%s-%d" % (request.node.name, explore["run"])
    tenant = mediagen_server.new_tenant(hint, clock=clock)
    for m in request.node.iter_markers(_EXPECT_MARK):
        tenant.control.expect_error(*m.args, **m.kwargs)
    if explore is not None:
        tenant.control.set_plan(explore["plan"])
    yield tenant
    tenant.delete(missing_ok=True)


def _given_tenant(server_url: str) -> Optional[Tuple[str, str]]:
    """The tenant (and key) the environment names: $MEDIAGEN_TENANT, else the TENANT of a
    $MEDIAGEN_API_KEY of the form KEY.TENANT; None when it names none, or when
    $MEDIAGEN_EMULATOR_URL does not name the session's emulator (a tenant named for another
    emulator is not this one's, and sharing it would leak state between tests)."""
    url = os.environ.get(URL_ENV, "").rstrip("/")
    if not url or url != server_url.rstrip("/"):
        return None
    key = os.environ.get(KEY_ENV, "")
    name = os.environ.get(TENANT_ENV, "") or (key.split(".", 1)[1] if "." in key else "")
    if not name:
        return None
    return name, key or ""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """With --mediagen-fail-on-unexpected: a test that passed fails when its tenant answered
    errors it did not declare expected; a test that failed shows them too. With
    --mediagen-snapshot-on-failure: a failed test's tenant is saved, before teardown deletes it."""
    outcome = yield
    if call.when != "call":
        return
    tenant = getattr(item, "funcargs", {}).get("mediagen")
    report = outcome.get_result()
    if not isinstance(tenant, Tenant) or report.skipped or hasattr(report, "wasxfail"):
        return
    explore = getattr(item, "_mediagen_explore", None)
    if explore is not None:
        _judge(explore, tenant, report)
        return  # a run of many: explore reports on the test once it is done
    if _flag(item.config, "mediagen_fail_on_unexpected"):
        _fail_on_unexpected(tenant, report)
    if report.failed:
        try:
            text = tenant.control.clock_diagnosis()
        except (EmulatorError, OSError) as err:
            text = "mediagen-emulator: cannot read the tenant's clock: %s" % err
        if text:
            report.sections.append(("mediagen-emulator clock", text))
    directory = _snapshot_dir(item.config)
    if directory and report.failed:
        try:
            path = tenant.control.save_snapshot(directory, item.nodeid.split("::", 1)[-1])
            text = ("the tenant %s is saved in %s\n(restore it with control.restore(path), or open it in the "
                    "dashboard; --state loads it into a new emulator)" % (tenant.name, path))
        except (EmulatorError, OSError) as err:
            text = "mediagen-emulator: cannot save the tenant's snapshot: %s" % err
        report.sections.append(("mediagen-emulator snapshot", text))


def _judge(explore: Dict[str, Any], tenant: Tenant, report: pytest.TestReport) -> None:
    """Reads the emulator's verdict on one explore run (the test's failure is exit status 1), and
    the bundle of a failed one, before the tenant is deleted."""
    exit = 1 if report.failed else 0
    explore["tenant"] = tenant.name
    try:
        explore["verdict"] = tenant.control.verdict(exit)
        if explore["verdict"].get("failed"):
            explore["bundle"] = tenant.control.bundle(explore["seed"], explore["run"], exit)
    except (EmulatorError, OSError) as err:
        explore["error"] = "mediagen-emulator explore: cannot judge the run in tenant %s: %s" % (tenant.name, err)


def _fail_on_unexpected(tenant: Tenant, report: pytest.TestReport) -> None:
    """Fails a passed test whose tenant answered unexpected errors, or lists them for a failed one."""
    try:
        got = tenant.control.call("GET", "/_emulator/unexpected")
        text = format_unexpected(got["data"], int(got.get("total", len(got["data"]))), tenant.name) if got["data"] else ""
    except (EmulatorError, OSError) as err:
        text = "mediagen-emulator: cannot list the tenant's unexpected errors: %s" % err
    if not text:
        return
    if report.passed:
        report.outcome = "failed"
        report.longrepr = text
    else:
        report.sections.append(("mediagen-emulator unexpected errors", text))


# --- explore ------------------------------------------------------------------------------------


class _Parents:
    """Stands for the next item during the runs of one explored test: its teardown then ends the
    test's own fixtures only, keeping the module's and the session's (the emulator) for the next
    run."""

    def __init__(self, item: pytest.Item):
        self._chain = item.listchain()[:-1]

    def listchain(self) -> List[Any]:
        return list(self._chain)


class _ServerControl:
    """The control API of the session's emulator, found when first used: the emulator starts with
    the explored test's first run, and draws and shrinks come after it."""

    def __init__(self, config: pytest.Config):
        self._config = config

    def __getattr__(self, name: str) -> Any:
        return getattr(getattr(self._config, "_mediagen_server").control, name)


class _Stop(Exception):
    """A run of an explored test that cannot be judged (a setup error, a skip, no verdict): its
    reports stand for the test."""

    def __init__(self, reports: List[pytest.TestReport]):
        super().__init__("stop")
        self.reports = reports


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]) -> Optional[bool]:
    """With --mediagen-explore or --mediagen-plan: runs a test marked mediagen_explore under
    plans instead of once, and reports on it once."""
    config = item.config
    runs, plan_file = config.getoption("mediagen_explore") or 0, config.getoption("mediagen_plan")
    if item.get_closest_marker(_EXPLORE_MARK) is None or not (runs > 0 or plan_file):
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    try:
        reports = _explore_item(item, runs, plan_file)
    except _Stop as stop:
        reports = stop.reports
    finally:
        item._mediagen_explore = None  # type: ignore[attr-defined]
    # The runs kept the module's and session's fixtures; now end what the next test does not need.
    call = CallInfo.from_call(lambda: item.session._setupstate.teardown_exact(nextitem), "teardown")
    if call.excinfo is not None:
        reports.append(item.ihook.pytest_runtest_makereport(item=item, call=call))
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _explore_item(item: pytest.Item, runs: int, plan_file: Optional[str]) -> List[pytest.TestReport]:
    """The reports that stand for an explored test: those of its smallest failing run, its call
    failed with what explore found, or those of its last run, which passed."""
    config = item.config
    seed = config.getoption("mediagen_explore_seed")
    keep = _Parents(item)

    def attempt(number: int, plan: Dict[str, Any], log: str) -> Run:
        state: Dict[str, Any] = {"plan": plan, "seed": seed, "run": number}
        item._mediagen_explore = state  # type: ignore[attr-defined]
        reports = runtestprotocol(item, nextitem=keep, log=False)  # type: ignore[arg-type]
        call = next((r for r in reports if r.when == "call"), None)
        if call is None or call.skipped or hasattr(call, "wasxfail") or "mediagen" not in item.fixturenames:
            if call is not None and not call.skipped and "mediagen" not in item.fixturenames:
                _fail(call, "mediagen-emulator: a test marked %s takes the `mediagen` fixture: each run needs a "
                      "tenant of its own" % _EXPLORE_MARK)
            raise _Stop(reports)
        if "error" in state or "verdict" not in state:
            _fail(call, state.get("error") or "mediagen-emulator explore: the run's tenant gave no verdict")
            raise _Stop(reports)
        return Run(number, plan, state["verdict"], state["tenant"], log, state.get("bundle"), reports)

    if plan_file:
        try:
            plan = read_plan(plan_file)
        except (OSError, ValueError) as err:
            raise pytest.UsageError("--mediagen-plan: %s" % err) from None
        run = attempt(1, plan, "")
        call = _call(run)
        if run.failed:
            _fail(call, "\n".join(["mediagen-emulator: the test fails under the plan of %s (tenant %s):" % (plan_file, run.tenant)]
                                  + failure_lines(run.verdict)))
        else:
            call.sections.append(("mediagen-emulator plan", "the test passed under the plan of %s" % plan_file))
        return list(run.extra)

    explorer = Explorer(_ServerControl(config), seed=seed)  # type: ignore[arg-type]
    last: List[Optional[Run]] = [None]

    def remember(number: int, plan: Dict[str, Any], log: str) -> Run:
        last[0] = attempt(number, plan, log)
        return last[0]

    try:
        found = explorer.explore(runs, remember)
    except (EmulatorError, OSError) as err:
        if last[0] is None:
            raise pytest.UsageError("mediagen-emulator explore: %s" % err) from None
        call = _call(last[0])
        _fail(call, "mediagen-emulator explore: %s" % err)
        return list(last[0].extra)
    if found is None:
        run = last[0]
        assert run is not None
        _call(run).sections.append(("mediagen-emulator explore", "%d run%s under plans drawn from seed %d: none failed"
                                    % (runs, "" if runs == 1 else "s", seed)))
        return list(run.extra)
    return _report_found(item, found, runs, seed)


def _report_found(item: pytest.Item, found: Found, runs: int, seed: int) -> List[pytest.TestReport]:
    small = found.smallest
    name = "%s-seed%d" % (item.nodeid, seed)
    bundle = small.bundle or {"plan": small.plan, "seed": seed, "run": small.number, "verdict": small.verdict}
    try:
        path = write_bundle(bundle, item.config.getoption("mediagen_explore_out"), name)
    except OSError as err:
        path = "(not written: %s)" % err
    message = describe(found, runs, seed, path, "pytest --mediagen-plan=%s '%s'" % (path, item.nodeid))
    call = _call(small)
    _fail(call, message)
    return list(small.extra)


def _call(run: Run) -> pytest.TestReport:
    return next(r for r in run.extra if r.when == "call")


def _fail(report: pytest.TestReport, message: str) -> None:
    """Makes a report failed with a message first, above the test's own failure, if any."""
    if report.failed and report.longrepr is not None:
        message += "\n\nthe test's own failure in that run:\n" + str(report.longreprtext if hasattr(report, "longreprtext") else report.longrepr)
    report.outcome = "failed"
    report.longrepr = message


# --- the run's coverage and report -------------------------------------------------------------


def _collect_run(config: pytest.Config, emu: Optional[Emulator]) -> None:
    """Reads the run's coverage and report from the emulator, once, as the options ask."""
    if emu is None or getattr(config, "_mediagen_run", None) is not None or not _run_wanted(config):
        return
    run: Dict[str, Any] = {"url": emu.url}
    control = emu.control
    require = _list(config, "mediagen_require")
    try:
        if _flag(config, "mediagen_coverage") or require:
            run["coverage"] = control.coverage("run", require)
        if _flag(config, "mediagen_report") or _list(config, "mediagen_fail_on_rule"):
            run["report"] = control.report("run")
        if _summary_file(config):
            run["markdown"] = "\n\n".join(m.strip("\n") for m in (control.coverage_markdown("run", require),
                                                                  control.report_markdown("run"))) + "\n"
    except (EmulatorError, OSError) as err:
        run["error"] = "cannot read the run's coverage and report from %s: %s" % (emu.url, err)
    config._mediagen_run = run  # type: ignore[attr-defined]


def _summary_emulator(config: pytest.Config) -> Optional[Emulator]:
    """The emulator that saw the whole run and still runs, if any."""
    shared = getattr(config, "_mediagen_shared", None)
    if shared is not None:
        return shared
    own = getattr(config, "_mediagen_server", None)
    if own is not None and (own.process is None or own.process.poll() is None):
        return own
    if _url(config):
        return Emulator.attach(_url(config))
    return None


def _selected(rule: str, severity: str, selectors: Sequence[str]) -> bool:
    for sel in selectors:
        if sel in _SEVERITIES:
            if _SEVERITIES.get(severity, -1) >= _SEVERITIES[sel]:
                return True
        elif fnmatch.fnmatchcase(rule, sel):
            return True
    return False


def rule_counts(report: Mapping[str, Any]) -> Dict[str, int]:
    """Findings per rule: the report's exact counts, else counted from its findings."""
    counts = dict(report.get("counts") or {})
    if not counts:
        for f in report.get("findings") or []:
            counts[f["rule"]] = counts.get(f["rule"], 0) + 1
    return counts


def _gate(config: pytest.Config, run: Mapping[str, Any]) -> List[str]:
    """Why the run fails on its coverage or report; empty when it does not."""
    problems = []
    if run.get("error"):
        # Printing is best effort; a gate that cannot be judged fails.
        gated = _list(config, "mediagen_require") or _list(config, "mediagen_fail_on_rule")
        return ["mediagen-emulator: " + run["error"]] if gated else []
    missing = (run.get("coverage") or {}).get("required_missing") or []
    if missing:
        problems.append("mediagen-emulator: %d required case%s never exercised: %s"
                        % (len(missing), "" if len(missing) == 1 else "s", ", ".join(missing)))
    selectors = _list(config, "mediagen_fail_on_rule")
    if selectors and "report" in run:
        severity = {r["id"]: r.get("severity", "") for r in run["report"].get("rules") or []}
        hit = {r: n for r, n in rule_counts(run["report"]).items() if n and _selected(r, severity.get(r, ""), selectors)}
        if hit:
            problems.append("mediagen-emulator: the report has findings of rules that fail the run: "
                            + ", ".join("%s (%d)" % (r, n) for r, n in sorted(hit.items())))
    return problems


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Iterator[None]:
    """After every test (and every xdist worker) is done: reads the run's coverage and report,
    writes the summary file, and fails the run when a gate says so."""
    yield
    config = session.config
    if _is_worker(config) or config.option.collectonly or not _run_wanted(config):
        return
    try:
        _collect_run(config, _summary_emulator(config))
    except Exception as err:  # attaching failed: say so in the summary, fail the run below
        config._mediagen_run = {"error": str(err)}  # type: ignore[attr-defined]
    run = getattr(config, "_mediagen_run", None)
    if run is None:
        return  # no test used an emulator
    path = _summary_file(config)
    if path and run.get("markdown"):
        with open(path, "a", encoding="utf-8") as f:
            f.write(run["markdown"])
    config._mediagen_gate = _gate(config, run)  # type: ignore[attr-defined]
    if config._mediagen_gate:  # type: ignore[attr-defined]
        session.testsfailed += 1


def format_coverage(cov: Mapping[str, Any], verbose: bool = False) -> List[str]:
    """The coverage in the short form every helper prints (Go's emulatortest.ShortCoverage, the
    Node helper's formatCoverage): the cases exercised in all and per group, then the required
    cases never exercised; with verbose, then every case with its count."""
    cases = cov.get("cases") or []
    groups: Dict[str, List[Mapping[str, Any]]] = {}
    for c in cases:
        groups.setdefault(c.get("group", ""), []).append(c)
    where = "the whole run" if cov.get("scope") == "run" else "tenant %s" % cov.get("tenant", "")
    lines = ["emulator coverage (%s): %s of %s cases exercised" % (where, cov.get("exercised"), cov.get("total"))]
    lines += ["  %-8s %3d of %d" % (g, sum(1 for c in cs if c.get("count")), len(cs)) for g, cs in groups.items()]
    missing = cov.get("required_missing") or []
    if missing:
        lines.append("required but never exercised (%d):" % len(missing))
        lines += ["  " + i for i in missing]
    if verbose:
        width = max([len(str(c.get("count", 0))) for c in cases] or [1])
        for g, cs in groups.items():
            lines.append(g + ":")
            lines += ["  %*s  %s" % (width, c.get("count") or "-", c["id"]) for c in cs]
    return lines


def format_report(rep: Mapping[str, Any], verbose: bool = False) -> List[str]:
    """The report as terminal lines: per rule its count and title, then each finding kept."""
    counts = rule_counts(rep)
    rules = {r["id"]: r for r in rep.get("rules") or []}
    lines = []
    for rid, n in sorted(counts.items(), key=lambda kv: (-_SEVERITIES.get(rules.get(kv[0], {}).get("severity", ""), -1), kv[0])):
        if n:
            r = rules.get(rid, {})
            lines.append("%-7s %-26s %4d  %s" % (r.get("severity", ""), rid, n, r.get("title", "")))
    findings = rep.get("findings") or []
    if findings:
        lines.append("findings:")
    for f in findings:
        where = " (tenant %s)" % f["tenant"] if f.get("tenant") else ""
        entries = " ".join("#%s" % e for e in f.get("entries") or [])
        lines.append("  %s: %s%s %s" % (f.get("rule"), f.get("reason", ""), where, entries))
    if not verbose and len(lines) > _QUIET_LINES:
        lines = lines[:_QUIET_LINES] + ["  … %d more lines (-v shows them)" % (len(lines) - _QUIET_LINES)]
    return lines


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Prints the run's coverage and report, and why the run failed on them."""
    run = getattr(config, "_mediagen_run", None)
    if _is_worker(config) or run is None:
        return
    tr = terminalreporter
    verbose = config.getoption("verbose") > 0
    if run.get("error"):
        tr.write_sep("-", "mediagen-emulator", red=True)
        tr.write_line(run["error"])
    if "coverage" in run and (_flag(config, "mediagen_coverage") or run["coverage"].get("required_missing")):
        cov = run["coverage"]
        tr.write_sep("-", "mediagen-emulator coverage")
        for line in format_coverage(cov, verbose):
            tr.write_line(line)
    if "report" in run and _flag(config, "mediagen_report"):
        rep = run["report"]
        n = sum(rule_counts(rep).values())
        tr.write_sep("-", "mediagen-emulator report (run): %d finding%s in %s requests" % (n, "" if n == 1 else "s", rep.get("examined")))
        for line in format_report(rep, verbose) or ["no findings"]:
            tr.write_line(line)
    for problem in getattr(config, "_mediagen_gate", []):
        tr.write_line(problem, red=True, bold=True)
