"""The Python guide's examples (docs/python.md), run: its test of a retry, and the failure message it shows."""

from __future__ import annotations

import os
import re
import uuid

import pytest

from _client import Client, image_model
from mediagen_emulator import Tenant

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "python.md")


def block(lang: str, containing: str) -> str:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    for body in re.findall(r"```%s\n(.*?)```" % lang, text, re.S):
        if containing in body:
            return body
    raise AssertionError("no ```%s block of %s holds %r" % (lang, README, containing))


class MyClient:
    """The guide's client: retries a 503 with the same key, after Retry-After."""

    def __init__(self, base_url: str, api_key: str, sleep):
        self.http = Client(Tenant("", base_url, api_key, {}, None))  # type: ignore[arg-type]
        self.sleep = sleep

    def render(self, model: str, data: dict) -> dict:
        quote_id = self.http.quote(model, data)["quote_id"]
        key = str(uuid.uuid4())
        while True:
            resp = self.http.generate(model, data, key, quote_id=quote_id)
            if resp.status != 503:
                assert resp.status == 202, resp.body
                return resp.json()
            self.sleep(int(resp.headers["Retry-After"]))


def test_the_retry_example(mediagen: Tenant):
    code = block("python", "def test_retry_keeps_its_key").replace('"fal-ai/flux/dev"', repr(image_model(mediagen.base_url)))
    scope = {"MyClient": MyClient}
    exec(compile(code, README, "exec"), scope)
    scope["test_retry_keeps_its_key"](mediagen)


def test_the_near_miss_message(mediagen: Tenant):
    client, c = Client(mediagen), mediagen.control
    client.generate(image_model(mediagen.base_url), {"prompt": "a red fox"}, "k1")
    with pytest.raises(AssertionError) as err:
        c.assert_requested(method="POST", path="/v1/generate", status=402)
    assert str(err.value) + "\n" == block("text", "near misses")
