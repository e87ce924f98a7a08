"""The forward-compatibility mode (a scenario's `evolution`) against the helpers: /v1 answers carry
an undocumented member in every object and an undocumented header, jobs pass through `preparing`,
the catalog lists a `3d` model. A client that reads what it knows, and the helpers that read the
journal, the verification, coverage and snapshots of such a tenant, go on working."""

from __future__ import annotations

from typing import Any, Iterator, List

import pytest

from _client import Client, image_model
from mediagen_emulator import Emulator, Tenant

EVOLVING = {"name": "evolving", "evolution": True}
DOCUMENTED_OUTPUTS = {"image", "video", "audio"}
TERMINAL = {"succeeded", "failed", "canceled", "expired"}


def members(v: Any) -> List[str]:
    """The undocumented members of an object."""
    return [k for k in v if k.startswith("x_mg_")]


def poll(client: Client, job_id: str) -> List[str]:
    """Polls a job until its status is terminal, as a forward-compatible client does: a status it
    does not know means "not finished yet". Returns the statuses seen."""
    seen: List[str] = []
    while not seen or seen[-1] not in TERMINAL:
        resp = client.request("GET", "/v1/jobs/" + job_id)
        assert resp.status == 200, resp.body
        seen.append(resp.json()["status"])
        assert len(seen) < 20, seen
    return seen


@pytest.fixture
def evolving(mediagen: Tenant) -> Tenant:
    sc = mediagen.control.set_scenario(document=EVOLVING)
    assert sc["evolution"] == {"members": True, "headers": True, "status": True, "output_type": True}
    return mediagen


def test_a_flow_in_the_evolution_mode(evolving: Tenant):
    c, client = evolving.control, Client(evolving)
    assert c.scenario()["evolution"]["output_type"] is True

    listing = client.request("GET", "/v1/models?limit=500")
    assert listing.status == 200, listing.body
    (member,) = members(listing.json())
    assert [h for h in listing.headers.keys() if h.lower().startswith("x-mediagen-")], dict(listing.headers)
    models = listing.json()["data"]
    assert all(member in m for m in models)
    odd = [m for m in models if m["output_type"] not in DOCUMENTED_OUTPUTS]
    assert [m["output_type"] for m in odd] == ["3d"]
    refused = client.request("POST", "/v1/quotes", {"model": odd[0]["id"], "input": {"prompt": "a teapot"}})
    assert refused.status == 409 and refused.json()["code"] == "model_unavailable", refused.body
    assert member in refused.json()

    model = image_model(evolving.base_url)
    created = client.generate(model, {"prompt": "a lighthouse"}, "evolve-1")
    assert created.status == 202, created.body
    job = created.json()
    assert member in job and job["input"] == {"prompt": "a lighthouse"}
    seen = poll(client, job["id"])
    assert "preparing" in seen and seen[-1] == "succeeded", seen
    waited = client.generate(model, {"prompt": "a harbour"}, "evolve-2", wait=True)
    assert waited.status == 200 and waited.json()["status"] == "succeeded", waited.body
    assert all(member in o for o in waited.json()["outputs"])

    # The helpers read the tenant's evidence as they would without the mode.
    polls = c.requests(path="/v1/jobs/*")
    assert len(polls) == len(seen) and all(e["status"] == 200 for e in polls)
    assert c.verify(method="GET", path="/v1/jobs/*")["count"] == len(seen)
    assert c.unexpected_errors()[0]["detail"].startswith("model " + repr(odd[0]["id"]).replace("'", '"'))
    c.expect_error(status=409, code="model_unavailable")
    c.assert_no_unexpected()
    assert c.coverage(require=["evolution *"])["required_missing"] == []


@pytest.fixture
def copy(mediagen_server: Emulator) -> Iterator[Tenant]:
    if not mediagen_server.supports_tenants():
        pytest.skip("the emulator has no tenants")
    t = mediagen_server.new_tenant("evolved-copy")
    yield t
    t.delete(missing_ok=True)


def test_the_mode_survives_a_snapshot(evolving: Tenant, copy: Tenant):
    job = Client(evolving).generate(image_model(evolving.base_url), {"prompt": "a kite"}, "evolve-snap", wait=True)
    assert job.status == 200, job.body
    copy.control.restore(evolving.control.snapshot())
    assert copy.control.scenario()["evolution"]["members"] is True
    original = Client(evolving).request("GET", "/v1/jobs/" + job.json()["id"]).json()
    restored = Client(copy).request("GET", "/v1/jobs/" + job.json()["id"]).json()
    assert members(restored) == members(original) != []
    assert restored[members(restored)[0]] == original[members(original)[0]]
