"""A tiny /v1 client for the tests, standing in for a user's own client library."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Dict, Optional

from mediagen_emulator import DEFAULT_KEY, Emulator, Tenant

_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class Response:
    status: int
    headers: Any
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Client:
    """Sends /v1 requests as one tenant, by its key form or by its header, and counts them."""

    def __init__(self, tenant: Tenant, by_header: bool = False):
        self.tenant = tenant
        self.by_header = by_header
        self.sent = 0
        self._lock = threading.Lock()

    def request(self, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None) -> Response:
        hdrs = dict(headers or {})
        if self.by_header:
            hdrs.update(self.tenant.headers)
            hdrs["Authorization"] = "Bearer " + DEFAULT_KEY
        else:
            hdrs["Authorization"] = "Bearer " + self.tenant.api_key
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        with self._lock:
            self.sent += 1
        req = urllib.request.Request(self.tenant.base_url + path, data=data, headers=hdrs, method=method)
        try:
            with _opener.open(req, timeout=60) as resp:
                return Response(resp.status, resp.headers, resp.read())
        except urllib.error.HTTPError as err:
            with err:
                return Response(err.code, err.headers, err.read())

    def quote(self, model: str, data: Dict[str, Any]) -> Dict[str, Any]:
        resp = self.request("POST", "/v1/quotes", {"model": model, "input": data})
        assert resp.status == 200, resp.body
        return resp.json()

    def generate(self, model: str, data: Dict[str, Any], idempotency_key: str, quote_id: Optional[str] = None,
                 wait: bool = False, headers: Optional[Dict[str, str]] = None) -> Response:
        if quote_id is None:
            quote_id = self.quote(model, data)["quote_id"]
        hdrs = {"Idempotency-Key": idempotency_key}
        hdrs.update(headers or {})
        return self.request("POST", "/v1/generate" + ("?wait=true" if wait else ""),
                            {"model": model, "input": data, "quote_id": quote_id}, hdrs)


def default_tenant(emu: Emulator) -> Tenant:
    """The default tenant as a Tenant: the plain key and no header."""
    return Tenant(name="default", base_url=emu.url, api_key=DEFAULT_KEY, headers={}, control=emu.control)


_model: Dict[str, str] = {}


def image_model(base_url: str) -> str:
    """The first text-to-image model of the catalog of the emulator at base_url."""
    if base_url not in _model:
        c = Client(default_tenant(Emulator(base_url)))
        resp = c.request("GET", "/v1/models?category=text-to-image&limit=1")
        assert resp.status == 200, resp.body
        _model[base_url] = resp.json()["data"][0]["id"]
    return _model[base_url]
