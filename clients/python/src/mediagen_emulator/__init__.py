"""Test helpers for mediagen-emulator: start or attach to the emulator, drive its control API,
and give each test its own tenant. The pytest plugin lives in mediagen_emulator.pytest_plugin.

    from mediagen_emulator import Emulator

    with Emulator.start(seed=42) as emu:
        tenant = emu.new_tenant("checkout")
        client = MyClient(tenant.base_url, tenant.api_key)
        tenant.control.advance("1m")
"""

from .control import (ADMIN_TOKEN_HEADER, TENANT_HEADER, Control, Duration, EmulatorError, EmulatorTimeout,
                      parse_time)
from .explore import Explorer, Found, Run
from .server import (ADMIN_TOKEN_ENV, BIN_ENV, DEFAULT_KEY, KEY_ENV, TENANT_ENV, URL_ENV, Emulator, EmulatorStartError,
                     Tenant, find_binary, tenant_name)
from .types import (Balance, Bundle, Clock, Coverage, CoverageCase, Drawn, Fault, FaultMatch, FaultSpec, Finding,
                    Health, Job, JournalEntry, Miss, NearMiss, Plan, PlanInForce, Problem, Report, RequestPattern,
                    ResetResult, Rule, Scenario, Snapshot, SnapshotResult, TenantInfo, UnexpectedError, Verdict,
                    VerdictFailure, Verification, Waiting, WebhookAttempt, WebhookConfig, WebhookEvent, Webhooks)
from .webhooks import Delivery, WebhookReceiver, WebhookVerificationError, new_secret, verify_webhook

__version__ = "0.1.0"

__all__ = [
    "ADMIN_TOKEN_ENV", "ADMIN_TOKEN_HEADER", "BIN_ENV", "DEFAULT_KEY", "KEY_ENV", "TENANT_ENV", "TENANT_HEADER", "URL_ENV",
    "Explorer", "Found", "Run", "Bundle", "Drawn", "Plan", "PlanInForce", "Verdict", "VerdictFailure",
    "Balance", "Clock", "Control", "Coverage", "CoverageCase", "Duration", "Emulator", "EmulatorError",
    "EmulatorStartError", "EmulatorTimeout", "Fault", "FaultMatch", "FaultSpec", "Finding", "Health", "Job",
    "JournalEntry", "Miss", "NearMiss", "Problem", "Report", "RequestPattern", "ResetResult", "Rule", "Scenario",
    "Snapshot", "SnapshotResult", "Tenant", "TenantInfo", "UnexpectedError", "Verification", "Waiting", "find_binary",
    "parse_time", "tenant_name",
    "Delivery", "WebhookAttempt", "WebhookConfig", "WebhookEvent", "WebhookReceiver", "WebhookVerificationError",
    "Webhooks", "new_secret", "verify_webhook",
]
