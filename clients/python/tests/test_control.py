"""The control client against the real emulator, each test in a world of its own."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest

from _client import Client, image_model
from mediagen_emulator import EmulatorError, EmulatorTimeout, Tenant
from mediagen_emulator.control import parse_time

ACCOUNT = "acct_all"


def test_health(own: Tenant):
    h = own.control.health()
    assert h["status"] == "ok"
    assert h["clock"] == "skip"
    assert h["models"] > 0
    assert h["control"] is True


@pytest.mark.mediagen_clock("manual")
def test_clock_moves_only_when_told(own: Tenant):
    c = own.control
    start = c.now()
    assert c.clock()["mode"] == "manual"
    assert c.now() == start
    c.advance("90s")
    c.advance(dt.timedelta(minutes=1))
    c.advance(2.5)
    assert c.now() - start == dt.timedelta(seconds=152.5)
    c.set_time(start + dt.timedelta(hours=1))
    assert c.now() == start + dt.timedelta(hours=1)
    with pytest.raises(EmulatorError) as err:
        c.set_time(start)  # the clock never moves back
    assert err.value.status == 422 or err.value.status == 400
    assert err.value.code == "invalid_clock_change"
    assert c.now() == start + dt.timedelta(hours=1)


def test_force_complete_and_fail(own: Tenant):
    client, c, model = Client(own), own.control, image_model(own.base_url)
    before = c.balance(ACCOUNT)
    ok = client.generate(model, {"prompt": "a lighthouse"}, "complete-me")
    assert ok.status == 202, ok.body
    done = c.complete_job(ok.json()["id"])
    assert done["status"] == "succeeded"
    assert done["credit_status"] == "charged"
    assert done["outputs"]

    bad = client.generate(model, {"prompt": "a harbour"}, "fail-me")
    failed = c.fail_job(bad.json()["id"], code="provider_timeout", message="the provider took too long")
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "provider_timeout", "message": "the provider took too long"}
    assert failed["credit_status"] == "refunded"

    after = c.balance(ACCOUNT)
    assert after["charged"] - before["charged"] == done["credits"]
    assert after["held"] == 0
    with pytest.raises(EmulatorError) as err:
        c.complete_job(failed["id"])  # already over
    assert err.value.status == 409
    with pytest.raises(EmulatorError) as err:
        c.fail_job("00000000-0000-0000-0000-000000000000")
    assert err.value.status == 404 and err.value.code == "job_not_found"


@pytest.mark.mediagen_clock("manual")
def test_wait_for_waiting_then_advance(own: Tenant):
    client, c, model = Client(own), own.control, image_model(own.base_url)
    first = client.generate(model, {"prompt": "a red fox"}, "order-1")
    assert first.status == 202
    answer = {}
    waiter = threading.Thread(target=lambda: answer.update(
        resp=client.generate(model, {"prompt": "a red fox"}, "order-1", quote_id=first.json()["quote_id"], wait=True)))
    waiter.start()
    try:
        assert c.wait_for_waiting(1, timeout=30) >= 1
    finally:
        c.advance("1m")
        waiter.join(60)
    resp = answer["resp"]
    assert resp.status == 200, resp.body
    assert resp.json()["id"] == first.json()["id"]
    assert resp.json()["status"] == "succeeded"


@pytest.mark.mediagen_clock("manual")
def test_wait_for_waiting_times_out(own: Tenant):
    with pytest.raises(EmulatorTimeout):
        own.control.wait_for_waiting(1, timeout=0.2)


def test_faults(own: Tenant):
    client, c = Client(own), own.control
    assert [f for f in c.faults() if f["source"] == "api"] == []
    outage = c.add_fault({"match": {"path": "/v1/models/categories"}, "status": 503}, count=1, retry_after=7)
    assert outage["status"] == 503 and outage["remaining"] == 1 and outage["source"] == "api"
    slow = c.add_fault(match={"path": "/v1/jobs/**"}, delay=dt.timedelta(seconds=2))
    assert slow["action"] == "delay" and slow["delay"] == "2s"
    assert {f["id"] for f in c.faults()} >= {outage["id"], slow["id"]}

    resp = client.request("GET", "/v1/models/categories")
    assert resp.status == 503 and resp.headers["Retry-After"] == "7"
    assert client.request("GET", "/v1/models/categories").status == 200  # count 1: spent
    assert next(f for f in c.faults() if f["id"] == outage["id"])["fired"] == 1

    c.delete_fault(slow["id"])
    assert slow["id"] not in {f["id"] for f in c.faults()}
    with pytest.raises(EmulatorError) as err:
        c.delete_fault(slow["id"])
    assert err.value.status == 404
    with pytest.raises(EmulatorError) as err:
        c.add_fault(match={"path": "/v1/models"}, action="explode")
    assert err.value.status == 422 and err.value.code == "invalid_request" and "explode" in err.value.detail
    with pytest.raises(EmulatorError) as err:
        c.add_fault(match={"path": "/v1/models"}, actoin="reset")
    assert "actoin" in err.value.problem["errors"][0]["message"]
    c.clear_faults()
    assert [f for f in c.faults() if f["source"] == "api"] == []


def test_scenario_by_name_and_inline(own: Tenant):
    c = own.control
    assert c.scenario()["name"] == "default"
    assert "flaky" in c.scenario()["available"]
    assert c.set_scenario("flaky")["name"] == "flaky"
    assert c.scenario()["name"] == "flaky"
    inline = c.set_scenario(document={"name": "blackout", "faults": [
        {"match": {"path": "/v1/models"}, "status": 503}]})
    assert inline["name"] == "blackout" and inline["faults"] == 1
    assert Client(own).request("GET", "/v1/models").status == 503
    c.clear_faults(include_scenario=True)
    assert Client(own).request("GET", "/v1/models").status == 200
    with pytest.raises(EmulatorError) as err:
        c.set_scenario("no-such-scenario")
    assert err.value.status == 404
    with pytest.raises(ValueError):
        c.set_scenario()


def test_accounts_and_credits(own: Tenant):
    client, c, model = Client(own), own.control, image_model(own.base_url)
    names = {b["account"] for b in c.accounts()}
    assert ACCOUNT in names
    assert c.set_credits(ACCOUNT, 0) == {"account": ACCOUNT, "available": 0, "held": 0, "charged": 0, "refunded": 0}
    resp = client.generate(model, {"prompt": "a red fox"}, "broke")
    assert resp.status == 402 and resp.json()["code"] == "insufficient_credits"
    with pytest.raises(EmulatorError) as err:
        c.set_credits("acct_nobody", 5)
    assert err.value.status == 404
    with pytest.raises(KeyError):
        c.balance("acct_nobody")


def test_journal(own: Tenant):
    client, c, model = Client(own), own.control, image_model(own.base_url)
    c.clear_requests()
    assert c.requests() == []
    client.generate(model, {"prompt": "a red fox"}, "journal-1")
    client.request("GET", "/v1/models/nope/nope")
    generated = c.requests(path="/v1/generate")
    assert [(e["method"], e["status"], e["idempotency_key"]) for e in generated] == [("POST", 202, "journal-1")]
    assert [e["path"] for e in c.requests(status=404)] == ["/v1/models/nope/nope"]
    assert len(c.requests(path="/v1/*")) == 2  # * stays within a segment: the quote, the generation
    assert len(c.requests(path="/v1/**")) == 3  # and the 404
    assert len(c.requests(limit=1)) == 1
    c.clear_requests()
    assert c.requests() == []


def test_reset_puts_everything_back(own: Tenant):
    client, c, model = Client(own), own.control, image_model(own.base_url)
    start = c.now()
    c.set_credits(ACCOUNT, 5)
    c.set_scenario("slow")
    c.add_fault(match={"path": "/v1/models"}, status=500)
    c.advance("1h")
    client.request("GET", "/v1/jobs")
    c.reset()
    assert c.now() == start
    assert c.balance(ACCOUNT)["available"] == 1_000_000
    assert c.scenario()["name"] == "default"
    assert [f for f in c.faults() if f["source"] == "api"] == []
    assert c.requests() == []
    assert client.request("GET", "/v1/models").status == 200
    assert model


def test_skip_clock_answers_in_real_milliseconds(own: Tenant):
    """On the skipping clock (the started emulator's default) a wait=true answers the finished
    job at once, and a client polling every 50 ms sees its job end within a handful of polls,
    while every timestamp is the simulated one."""
    client, model = Client(own), image_model(own.base_url)
    own.control.set_clock_mode("skip")  # as the plugin starts it; explicit for an attached emulator
    began = time.monotonic()
    resp = client.generate(model, {"prompt": "a red fox"}, "skip-wait", wait=True)
    waited = time.monotonic() - began
    job = resp.json()
    assert (resp.status, job["status"]) == (200, "succeeded")
    assert parse_time(job["finished_at"]) > parse_time(job["started_at"]) > parse_time(job["created_at"])

    first = client.generate(model, {"prompt": "a grey wolf"}, "skip-poll")
    job, polls, began = first.json(), 0, time.monotonic()
    while job["status"] in ("queued", "running"):
        time.sleep(0.05)  # the client's own pace between polls, not a wait for the emulator
        job = client.request("GET", "/v1/jobs/" + job["id"]).json()
        polls += 1
    polled = time.monotonic() - began
    assert (job["status"], polls) == ("succeeded", 2)
    # Generous bounds: without the skip the wait alone is the job's simulated second.
    assert waited < 5 and polled < 5, (waited, polled)
    print("wait=true answered in %.3f s; polling every 50 ms saw the end after %d polls, %.3f s" % (waited, polls, polled))
