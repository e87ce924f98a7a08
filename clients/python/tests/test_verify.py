"""Verification, expected and unexpected errors, coverage and the report, through the control
client against the real emulator, each test on a tenant of its own."""

from __future__ import annotations

import pytest

from _client import Client, image_model
from mediagen_emulator import EmulatorError, Tenant


@pytest.fixture
def tenant(mediagen: Tenant) -> Tenant:
    return mediagen


def test_verify_counts_matches(tenant: Tenant):
    client, c, model = Client(tenant), tenant.control, image_model(tenant.base_url)
    client.generate(model, {"prompt": "a cat"}, "k1")
    client.generate(model, {"prompt": "a dog"}, "k2")
    got = c.verify(method="post", path="/v1/generate")
    assert got["count"] == 2 and len(got["matches"]) == 2 and got["matches"] == sorted(got["matches"])
    assert "near_misses" not in got or not got["near_misses"]
    assert c.verify({"path": "/v1/generate"}, headers={"idempotency-key": "k1"})["count"] == 1
    assert c.verify(path="/v1/*", pointers={"/input/prompt": "a dog"})["count"] == 2  # the quote and the generation
    assert c.verify(body={"model": model, "input": {"prompt": "a cat"}}, path="/v1/generate")["count"] == 1
    assert c.verify()["count"] == len(c.requests())  # the empty pattern matches every entry


def test_assert_requested_explains_near_misses(tenant: Tenant):
    client, c, model = Client(tenant), tenant.control, image_model(tenant.base_url)
    client.generate(model, {"prompt": "a dog"}, "k2")
    c.assert_requested(method="POST", path="/v1/generate")
    c.assert_requested(1, method="POST", path="/v1/generate", status=202)
    with pytest.raises(AssertionError) as err:
        c.assert_requested(method="POST", path="/v1/generate", status=402, headers={"Idempotency-Key": "k1"},
                           pointers={"/input/prompt": "a cat"})
    text = str(err.value)
    assert "expected at least 1 request matching method=POST path=/v1/generate status=402" in text
    assert "0 matched" in text and "near misses" in text
    assert "POST /v1/generate -> 202" in text
    assert '/status: want 402, got 202' in text
    assert '/headers/Idempotency-Key: want "k1", got "k2"' in text
    assert '/pointers/~1input~1prompt: want "a cat", got "a dog"' in text
    with pytest.raises(AssertionError) as err:
        c.assert_requested(3, path="/v1/*")
    assert "expected 3 requests matching path=/v1/*; 2 matched" in str(err.value)
    assert "matching journal entries: #" in str(err.value)


def test_a_bad_pattern_is_422(tenant: Tenant):
    with pytest.raises(EmulatorError) as err:
        tenant.control.verify(status=99, colour="red")
    assert err.value.status == 422 and err.value.code == "invalid_request"
    assert {e.get("pointer") for e in err.value.problem["errors"]} >= {"/status", "/colour"}


def test_expected_and_unexpected_errors(tenant: Tenant):
    client, c, model = Client(tenant), tenant.control, image_model(tenant.base_url)
    c.set_credits("acct_all", 0)
    assert client.generate(model, {"prompt": "a cat"}, "broke").status == 402
    assert client.request("GET", "/v1/models/no/such-model").status == 404
    got = c.unexpected_errors()
    assert [(u["entry"]["status"], u["entry"]["code"]) for u in got] == [(402, "insufficient_credits"), (404, "model_not_found")]
    assert all(u["detail"] for u in got)
    with pytest.raises(AssertionError) as err:
        c.assert_no_unexpected()
    text = str(err.value)
    assert text.startswith("2 unexpected errors in tenant %s" % tenant.name)
    assert "POST /v1/generate -> 402 insufficient_credits: " + got[0]["detail"] in text
    assert '"prompt": "a cat"' in text.split("\n")[2]  # the request body, then the answer's
    assert "response: " in text and '"code": "insufficient_credits"' in text

    assert c.expect_error(status=402, code="insufficient_credits") == [{"status": 402, "code": "insufficient_credits"}]
    c.expect_error({"path": "/v1/models/**"}, status=404)
    assert len(c.expected_errors()) == 2
    assert c.unexpected_errors() == []
    c.assert_no_unexpected()
    c.clear_expected_errors()
    assert c.expected_errors() == [] and len(c.unexpected_errors()) == 2
    c.expect_error(code="model_not_found")
    c.reset()  # part of the tenant's world
    assert c.expected_errors() == []


def test_coverage(tenant: Tenant):
    client, c, model = Client(tenant), tenant.control, image_model(tenant.base_url)
    assert client.request("GET", "/v1/jobs/00000000-0000-0000-0000-000000000000").status == 404
    cov = c.coverage(require=["GET /v1/jobs/{id} 404 *", "job failed *"])
    assert cov["scope"] == "tenant" and cov["tenant"] == tenant.name
    counts = {case["id"]: case["count"] for case in cov["cases"]}
    assert counts["GET /v1/jobs/{id} 404 job_not_found"] == 1
    assert cov["exercised"] == sum(1 for n in counts.values() if n) and cov["total"] == len(counts)
    assert "job failed provider_error" in cov["required_missing"]
    assert not any(m.startswith("GET /v1/jobs/{id} 404") for m in cov["required_missing"])
    assert c.coverage(require="job failed *")["required_missing"] == [i for i in counts if i.startswith("job failed ")]
    run = c.coverage(scope="run")
    assert run["scope"] == "run"
    assert {x["id"]: x["count"] for x in run["cases"]}["GET /v1/jobs/{id} 404 job_not_found"] >= 1
    md = c.coverage_markdown(scope="tenant")
    assert "|" in md and "GET /v1/jobs/{id} 404 job_not_found" in md
    assert model


def test_report(tenant: Tenant):
    client, c, model = Client(tenant), tenant.control, image_model(tenant.base_url)
    quote_id = client.quote(model, {"prompt": "a cat"})["quote_id"]
    first = client.generate(model, {"prompt": "a cat"}, "first", quote_id=quote_id)
    assert first.status == 202
    assert client.request("GET", "/v1/jobs/" + first.json()["id"]).status == 200  # the client has its job
    assert client.generate(model, {"prompt": "a cat"}, "second", quote_id=quote_id).status == 409  # quote_already_used
    rep = c.report()
    assert rep["scope"] == "tenant" and rep["tenant"] == tenant.name and rep["examined"] >= 3
    [finding] = [f for f in rep["findings"] if f["rule"] == "quote-reused"]
    assert finding["severity"] == "error" and finding["reason"] and finding["entries"]
    assert rep["counts"]["quote-reused"] == 1
    assert {r["id"] for r in rep["rules"]} >= {"new-key-on-retry", "quote-reused", "poll-too-fast"}
    assert c.report(scope="run")["scope"] == "run"
    md = c.report_markdown(scope="tenant")
    assert "quote-reused" in md
