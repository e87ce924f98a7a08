"""Typed shapes of what the emulator's control API sends and answers.

They are TypedDicts: the values are the plain dicts decoded from JSON, so fields a newer
emulator adds come through untouched, while editors and type checkers know the documented ones.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # pragma: no cover - older interpreters
    from typing import TypedDict

    NotRequired = Optional  # close enough for readers; checkers on 3.9/3.10 see Optional


class Clock(TypedDict):
    """The emulator's clock: `mode` is "manual" or "real", `now` an RFC 3339 time."""

    mode: str
    now: str


class Health(TypedDict):
    """GET /_emulator/health."""

    status: str
    version: str
    clock: str
    now: str
    models: int
    scenario: str
    seeded: bool
    control: bool
    waiting: int


class Waiting(TypedDict):
    """GET /_emulator/waiting: how many wait=true generations are waiting, and whether the
    count asked for was reached before the timeout."""

    waiting: int
    reached: bool


class FaultMatch(TypedDict, total=False):
    """Which requests a fault applies to; `path` and `model` may end in `*` for a prefix."""

    method: str
    path: str
    model: str
    category: str
    output_type: str


class FaultSpec(TypedDict, total=False):
    """A fault rule to add, as in a scenario file. `action` is "error" (the default when a
    status is given), "reset", "malformed", "truncated" or "delay"; `delay` is a duration such as "2s"."""

    match: FaultMatch
    action: str
    status: int
    code: str
    delay: str
    retry_after: int
    count: int
    probability: float


class Fault(TypedDict):
    """A fault rule in force (GET /_emulator/faults), with how often it may still fire."""

    id: str
    source: str
    match: FaultMatch
    action: str
    status: NotRequired[int]
    code: NotRequired[str]
    delay: NotRequired[str]
    retry_after: NotRequired[int]
    probability: NotRequired[float]
    remaining: int
    fired: int


class Scenario(TypedDict):
    """GET/PUT /_emulator/scenario: the scenario in force and the embedded names."""

    name: str
    description: str
    source: str
    overrides: int
    rate_limits: int
    faults: int
    available: List[str]


class Balance(TypedDict):
    """An account's credits: what it can spend, what jobs hold, what was charged and refunded."""

    account: str
    available: int
    held: int
    charged: int
    refunded: int


class JournalEntry(TypedDict):
    """One /v1 request as the journal (GET /_emulator/requests) recorded it."""

    seq: int
    time: str
    method: str
    path: str
    query: str
    status: int
    code: NotRequired[str]
    account: NotRequired[str]
    model: NotRequired[str]
    job_id: NotRequired[str]
    request_id: str
    idempotency_key: NotRequired[str]
    fault: NotRequired[str]
    duration_ms: float


class TenantInfo(TypedDict):
    """One tenant in GET /_emulator/tenants."""

    name: str
    created_at: str
    last_used_at: str
    jobs: int
    clock: Clock


Job = Dict[str, Any]
"""A job as /v1/jobs/{id} shows it (see the README's API reference)."""

Problem = Dict[str, Any]
"""An RFC 9457 problem body: type, title, status, detail, code, request_id, errors."""
