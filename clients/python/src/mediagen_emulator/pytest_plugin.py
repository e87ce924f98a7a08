"""pytest fixtures for mediagen-emulator.

- ``mediagen_server`` (session): one emulator for the test run. It attaches to
  ``--mediagen-url`` / $MEDIAGEN_EMULATOR_URL when given, else starts the binary
  (``--mediagen-bin``, $MEDIAGEN_EMULATOR_BIN, the wheel's own, or PATH) with a manual clock. Override the
  session fixture ``mediagen_server_options`` to pass other ``Emulator.start`` options. Under
  pytest-xdist each worker starts its own emulator, unless ``--mediagen-shared`` makes the
  controller start one for all workers, or a URL is given.
- ``mediagen`` (function): a fresh tenant of that emulator for one test, named after it, with
  ``base_url``, ``api_key`` (``mg_test_all.<tenant>``), ``headers`` and ``control``; deleted
  after the test. Skips the test when the emulator does not know tenants.

Installed, the plugin loads itself (entry point ``pytest11``); from a checkout, use
``PYTHONPATH=clients/python/src pytest -p mediagen_emulator.pytest_plugin``.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterator

import pytest

from .server import ADMIN_TOKEN_ENV, URL_ENV, Emulator, Tenant

_SHARED_URL = "mediagen_emulator_url"
_SHARED_TOKEN = "mediagen_emulator_admin_token"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mediagen_emulator", "mediagen-emulator")
    group.addoption("--mediagen-bin", default=None, help="the mediagen-emulator binary to start (default: $MEDIAGEN_EMULATOR_BIN, then the one installed with this package, then PATH)")
    group.addoption("--mediagen-url", default=None, help="attach to the emulator at this URL instead of starting one (default: $MEDIAGEN_EMULATOR_URL)")
    group.addoption("--mediagen-shared", action="store_true", default=False,
                    help="with pytest-xdist, start one emulator in the controller and let every worker use it (each test has its own tenant)")


def _url(config: pytest.Config) -> str:
    return config.getoption("mediagen_url") or os.environ.get(URL_ENV, "")


def _xdist_workers(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and getattr(config.option, "dist", "no") != "no"


def pytest_configure(config: pytest.Config) -> None:
    # The xdist controller starts the shared emulator before any worker exists.
    if (config.getoption("mediagen_shared") and not hasattr(config, "workerinput") and _xdist_workers(config)
            and not _url(config)):
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
        emu = Emulator.attach(_url(config))
    elif shared:
        emu = Emulator(shared, getattr(config, "workerinput", {}).get(_SHARED_TOKEN) or os.environ.get(ADMIN_TOKEN_ENV) or None)
    else:
        options = dict(mediagen_server_options)
        options.setdefault("binary", config.getoption("mediagen_bin"))
        emu = Emulator.start(**options)
    yield emu
    code = emu.close()
    if code not in (None, 0):
        raise RuntimeError("the emulator exited with %s after SIGTERM (log: %s)" % (code, emu.log_path))


@pytest.fixture
def mediagen(request: pytest.FixtureRequest, mediagen_server: Emulator) -> Iterator[Tenant]:
    """A tenant of its own for one test, deleted afterwards."""
    if not mediagen_server.supports_tenants():
        pytest.skip("the emulator at %s does not support tenants (GET /_emulator/tenants answered 404); "
                    "use a newer mediagen-emulator" % mediagen_server.url)
    tenant = mediagen_server.new_tenant(request.node.name)
    yield tenant
    tenant.delete(missing_ok=True)
