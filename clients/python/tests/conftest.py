"""Fixtures of the package's own tests. The plugin itself comes from the installed package's
entry point, or from `-p mediagen_emulator.pytest_plugin`."""

from __future__ import annotations

from typing import Iterator

import pytest

from _client import default_tenant
from mediagen_emulator import Emulator, Tenant

pytest_plugins = ["pytester"]


@pytest.fixture
def own(request: pytest.FixtureRequest, mediagen_server: Emulator) -> Iterator[Tenant]:
    """A world of the test's own: a tenant when the emulator has tenants; otherwise the default
    tenant, reset (only safe when no other process shares the emulator)."""
    if mediagen_server.supports_tenants():
        yield request.getfixturevalue("mediagen")
        return
    if hasattr(request.config, "workerinput") and mediagen_server.process is None:
        pytest.skip("the emulator has no tenants and is shared with other workers")
    mediagen_server.control.reset()
    yield default_tenant(mediagen_server)
