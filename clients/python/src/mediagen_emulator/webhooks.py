"""A webhook receiver for tests: it verifies each delivery as the Standard Webhooks specification
describes (HMAC-SHA256 over "id.timestamp.body" with the secret's bytes, a timestamp within five
minutes), collects them, and lets a test wait for its job's event.

    receiver = tenant.control.webhook_receiver()          # listens on loopback, PUTs the webhook
    job = client.generate(...)
    tenant.control.advance("30s")
    delivery = receiver.wait_for(job["id"], "job.succeeded")
    assert delivery.event["data"]["status"] == "succeeded"
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import hmac
import json
import os
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Mapping, Optional

from .control import EmulatorTimeout

TOLERANCE = _dt.timedelta(minutes=5)
"""How far a delivery's webhook-timestamp may be from the receiver's clock."""


class WebhookVerificationError(Exception):
    """A delivery that does not verify."""


def new_secret() -> str:
    """A fresh whsec_ secret of 32 random bytes."""
    return "whsec_" + base64.b64encode(os.urandom(32)).decode()


def verify_webhook(secret: str, headers: Mapping[str, str], body: bytes,
                   now: Optional[_dt.datetime] = None) -> Dict[str, Any]:
    """Checks a delivery and returns its parsed body; raises WebhookVerificationError otherwise.
    headers may be any mapping; names are matched without regard to case."""
    h = {k.lower(): v for k, v in headers.items()}
    msg_id, ts, sigs = h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature")
    if not msg_id or not ts or not sigs:
        raise WebhookVerificationError("webhook-id, webhook-timestamp or webhook-signature is missing")
    try:
        sent = int(ts)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not an integer") from None
    now = now or _dt.datetime.now(_dt.timezone.utc)
    if abs(now.timestamp() - sent) > TOLERANCE.total_seconds():
        raise WebhookVerificationError("webhook-timestamp is more than 5 minutes from now")
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
    want = hmac.new(key, b"%s.%s.%s" % (msg_id.encode(), ts.encode(), body), hashlib.sha256).digest()
    for sig in sigs.split():
        version, _, b64 = sig.partition(",")
        if version == "v1":
            try:
                got = base64.b64decode(b64)
            except ValueError:
                continue
            if hmac.compare_digest(got, want):
                return json.loads(body)
    raise WebhookVerificationError("no signature matches")


@dataclass
class Delivery:
    """One request the receiver got."""
    id: str
    timestamp: int
    headers: Dict[str, str]
    body: bytes
    #: The parsed body when it verified, else None.
    event: Optional[Dict[str, Any]] = None
    #: Why it was refused, None when it verified.
    error: Optional[str] = None
    status: int = 204


@dataclass
class WebhookReceiver:
    """Listens on 127.0.0.1 and verifies every delivery with `secret` against `now()` (the
    emulator's clock when made by Control.webhook_receiver). A valid delivery is answered with
    answer(delivery) (204 by default); any other with 401. Close it, or use it as a context
    manager."""
    secret: str = field(default_factory=new_secret, repr=False)
    now: Callable[[], _dt.datetime] = lambda: _dt.datetime.now(_dt.timezone.utc)
    answer: Optional[Callable[[Delivery], int]] = None

    def __post_init__(self) -> None:
        self._cond = threading.Condition()
        self._got: List[Delivery] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server spelling)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver._receive(self, body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """Where deliveries go."""
        host, port = self._server.server_address[:2]
        return "http://%s:%d/webhooks" % (host, port)

    def _receive(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            ts = int(headers.get("webhook-timestamp", "0"))
        except ValueError:
            ts = 0
        d = Delivery(id=headers.get("webhook-id", ""), timestamp=ts, headers=headers, body=body)
        try:
            d.event = verify_webhook(self.secret, headers, body, self.now())
            if self.answer is not None:
                d.status = self.answer(d)
        except (WebhookVerificationError, ValueError) as err:
            d.error, d.status = str(err), 401
        with self._cond:
            self._got.append(d)
            self._cond.notify_all()
        handler.send_response(d.status)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    @property
    def deliveries(self) -> List[Delivery]:
        """Every request received, valid or not, in order."""
        with self._cond:
            return list(self._got)

    def wait_for(self, job_id: str, event: str = "job.succeeded", timeout: float = 30.0) -> Delivery:
        """The first valid delivery of a job's event, waiting up to timeout seconds of real time.
        On a manual clock deliveries go out when the clock is advanced: advance it first."""
        def found() -> Optional[Delivery]:
            for d in self._got:
                if d.event and d.event.get("type") == event and (d.event.get("data") or {}).get("id") == job_id:
                    return d
            return None
        with self._cond:
            if not self._cond.wait_for(lambda: found() is not None, timeout):
                raise EmulatorTimeout("no valid %s delivery for job %s within %.0f s; received %d requests"
                                      % (event, job_id, timeout, len(self._got)))
            return found()  # type: ignore[return-value]

    def close(self) -> None:
        """Stops listening."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "WebhookReceiver":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
