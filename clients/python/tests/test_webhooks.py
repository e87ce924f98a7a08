"""The webhook receiver against the real emulator: deliveries verify, a test awaits its job's
event, a retry keeps its id, and verify_webhook refuses what the specification refuses."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from _client import Client, image_model
from mediagen_emulator import Tenant, WebhookVerificationError, new_secret, verify_webhook
from mediagen_emulator.control import parse_time


def test_receiver_awaits_the_jobs_end(own: Tenant):
    client, c = Client(own), own.control
    with c.webhook_receiver() as receiver:
        job = client.generate(image_model(own.base_url), {"prompt": "a lighthouse"}, "hook-1").json()
        c.advance("10m")
        d = receiver.wait_for(job["id"], "job.succeeded")
        assert d.error is None and d.id.startswith("msg_")
        polled = client.request("GET", "/v1/jobs/" + job["id"]).json()
        assert d.event["data"] == polled
        assert all(x.error is None for x in receiver.deliveries)
        log = c.webhook_deliveries()
        assert [a["outcome"] for a in log] == ["delivered"]
        assert c.webhooks()["config"]["secret_set"] is True
        assert "secret" not in c.webhooks()["config"]


def test_a_refused_delivery_is_retried_with_its_id(own: Tenant):
    client, c = Client(own), own.control
    with c.webhook_receiver() as receiver:
        answers = iter([500])
        receiver.answer = lambda d: next(answers, 204)
        job = client.generate(image_model(own.base_url), {"prompt": "a harbour"}, "hook-2").json()
        c.advance("10m")  # the job ends, the first attempt fails, the retry 5 s later succeeds
        got = receiver.deliveries
        assert len(got) == 2 and got[0].id == got[1].id
        assert got[1].timestamp - got[0].timestamp == 5
        assert receiver.wait_for(job["id"]).id == got[1].id and got[1].status == 204
    c.delete_webhook()
    assert c.webhooks()["config"] is None


def test_verify_webhook_follows_the_specification():
    secret = new_secret()
    key = base64.b64decode(secret[len("whsec_"):])
    body = json.dumps({"type": "job.succeeded"}).encode()
    now = parse_time("2026-01-01T00:00:00Z")
    ts = str(int(now.timestamp()))
    sig = base64.b64encode(hmac.new(key, b"msg_1." + ts.encode() + b"." + body, hashlib.sha256).digest()).decode()
    headers = {"Webhook-Id": "msg_1", "Webhook-Timestamp": ts, "Webhook-Signature": "v1,bad v1," + sig}
    assert verify_webhook(secret, headers, body, now)["type"] == "job.succeeded"
    for bad in ({**headers, "Webhook-Signature": "v1," + sig[::-1]},
                {**headers, "Webhook-Timestamp": str(int(now.timestamp()) - 301)},
                {**headers, "Webhook-Id": "msg_2"},
                {"Webhook-Id": "msg_1"}):
        with pytest.raises(WebhookVerificationError):
            verify_webhook(secret, bad, body, now)
