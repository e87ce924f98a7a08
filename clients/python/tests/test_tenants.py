"""Tenants keep tests apart on one emulator.

`test_isolated` is meant to run in parallel (python -m pytest -n 4 --mediagen-shared, or every worker
attached to one emulator through MEDIAGEN_EMULATOR_URL): each copy moves its own clock, adds its
own faults, spends its own credits, resets, and checks it sees only what it did itself.
`test_isolated_in_threads` does the same with threads that start together, so the overlap is
certain even without xdist.
"""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from _client import Client, image_model
from mediagen_emulator import DEFAULT_KEY, Emulator, EmulatorError, Tenant

ACCOUNT = "acct_all"


@pytest.fixture(autouse=True)
def _need_tenants(mediagen_server: Emulator):
    if not mediagen_server.supports_tenants():
        pytest.skip("the emulator does not answer GET /_emulator/tenants: it has no tenants yet")


def exercise(t: Tenant, i: int, barrier: threading.Barrier = None) -> None:
    """One test's worth of work in tenant `t`, checking nothing leaks in from elsewhere. `i`
    makes this copy's numbers differ from the others'."""
    client = Client(t, by_header=i % 2 == 1)  # the key form and the header both choose the tenant
    c, model = t.control, image_model(t.base_url)
    c.set_clock_mode("manual")  # the wait=true below waits until this test moves the clock
    start = c.now()
    credits = 500_000 + i

    c.set_credits(ACCOUNT, credits)
    fault = c.add_fault(match={"path": "/v1/models/categories"}, status=503, code="service_unavailable", count=1)
    if barrier:
        barrier.wait(60)

    # Its own clock: moved by this test alone.
    c.advance(dt.timedelta(minutes=i + 1))
    assert c.now() - start == dt.timedelta(minutes=i + 1)

    # Its own faults: exactly the one it added, firing on its own requests.
    assert [f["id"] for f in c.faults() if f["source"] == "api"] == [fault["id"]]
    assert client.request("GET", "/v1/models/categories").status == 503
    assert client.request("GET", "/v1/models/categories").status == 200

    # Its own jobs, under idempotency keys every copy uses.
    mine, spent = set(), 0
    for n in range(i % 3 + 1):
        resp = client.generate(model, {"prompt": "copy %d, picture %d" % (i, n)}, "order-%d" % n)
        assert resp.status == 202, resp.body
        assert resp.headers.get("Idempotent-Replayed") is None
        mine.add(resp.json()["id"])
        spent += resp.json()["credits"]
    # One more through wait=true: the retry waits, the test moves the clock once it waits.
    last = client.generate(model, {"prompt": "copy %d waits" % i}, "order-wait")
    mine.add(last.json()["id"])
    spent += last.json()["credits"]
    answer = {}
    waiter = threading.Thread(target=lambda: answer.update(resp=client.generate(
        model, {"prompt": "copy %d waits" % i}, "order-wait", quote_id=last.json()["quote_id"], wait=True)))
    waiter.start()
    try:
        c.wait_for_waiting(1, timeout=30)
    finally:
        c.advance("1m")
        waiter.join(60)
    assert answer["resp"].status == 200 and answer["resp"].json()["status"] == "succeeded"

    listed = client.request("GET", "/v1/jobs?limit=500").json()
    assert {j["id"] for j in listed["data"]} == mine and listed["total"] == len(mine)
    assert all(j["status"] == "succeeded" for j in listed["data"])
    assert c.balance(ACCOUNT) == {"account": ACCOUNT, "available": credits - spent, "held": 0, "charged": spent, "refunded": 0}
    journal = c.requests()
    assert len(journal) == client.sent  # every /v1 request this test sent, and no other
    assert {e["job_id"] for e in journal if e.get("job_id")} == mine
    assert {e.get("idempotency_key") for e in c.requests(path="/v1/generate")} == {"order-%d" % n for n in range(i % 3 + 1)} | {"order-wait"}

    # Its own reset: back to the start, whatever the others are doing.
    c.reset()
    assert c.now() == start
    assert client.request("GET", "/v1/jobs").json()["data"] == []
    assert c.balance(ACCOUNT) == {"account": ACCOUNT, "available": 1_000_000, "held": 0, "charged": 0, "refunded": 0}
    assert [f for f in c.faults() if f["source"] == "api"] == []
    assert c.requests(path="/v1/generate") == []


@pytest.mark.parametrize("i", range(8))
def test_isolated(mediagen: Tenant, i: int):
    exercise(mediagen, i)


def test_isolated_in_threads(mediagen_server: Emulator):
    tenants = [mediagen_server.new_tenant("threads-%d" % i) for i in range(4)]
    barrier = threading.Barrier(len(tenants))
    errors = []

    def run(i: int, t: Tenant) -> None:
        try:
            exercise(t, i, barrier)
        except BaseException as err:  # reported below, with the others
            barrier.abort()
            errors.append((t.name, err))

    threads = [threading.Thread(target=run, args=(i, t)) for i, t in enumerate(tenants)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    try:
        assert not errors, errors
    finally:
        for t in tenants:
            t.delete()


def test_choosing_a_tenant(mediagen: Tenant):
    by_key, by_header = Client(mediagen), Client(mediagen, by_header=True)
    model = image_model(mediagen.base_url)
    job = by_key.generate(model, {"prompt": "seen from both sides"}, "k1").json()
    assert by_header.request("GET", "/v1/jobs/" + job["id"]).status == 200
    # The default tenant cannot see it.
    plain = Client(Tenant("default", mediagen.base_url, DEFAULT_KEY, {}, mediagen.control))
    assert plain.request("GET", "/v1/jobs/" + job["id"]).status == 404
    # A bad name, or a header and a key that disagree: 400 invalid_tenant.
    for headers in ({"X-Emulator-Tenant": "no spaces"}, {"X-Emulator-Tenant": "x" * 65}):
        resp = plain.request("GET", "/v1/models", headers=headers)
        assert resp.status == 400 and resp.json()["code"] == "invalid_tenant"
    resp = by_key.request("GET", "/v1/models", headers={"X-Emulator-Tenant": "someone-else"})
    assert resp.status == 400 and resp.json()["code"] == "invalid_tenant"


def test_listing_and_deleting_tenants(mediagen_server: Emulator):
    t = mediagen_server.new_tenant("listed")
    Client(t).generate(image_model(t.base_url), {"prompt": "one job"}, "only")
    info = next(x for x in t.control.tenants() if x["name"] == t.name)
    assert info["jobs"] == 1
    assert info["clock"]["mode"] == mediagen_server.control.health()["clock"]
    assert "default" in {x["name"] for x in mediagen_server.control.tenants()}
    t.control.delete_tenant(t.name)
    assert t.name not in {x["name"] for x in mediagen_server.control.tenants()}
    with pytest.raises(EmulatorError) as err:
        mediagen_server.control.delete_tenant(t.name)
    assert err.value.status == 404 and err.value.code == "tenant_not_found"
    t.delete()  # missing_ok by default
    with pytest.raises(EmulatorError) as err:
        mediagen_server.control.delete_tenant("default")
    assert err.value.status == 409
