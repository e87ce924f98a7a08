"""The hasty client's own tests: against the plain stub they all pass. The stub cannot see what
is wrong with the client; test_behaviour_report.py runs it against the emulator, which can."""

import pytest

from careful_client import CarefulClient
from hasty_client import HastyClient
from stub_service import PNG, StubService


@pytest.fixture
def pauses():
    return []  # what the client slept, instead of sleeping


def test_render_returns_the_outputs(pauses):
    with StubService() as stub:
        urls = HastyClient(stub.url, "key", sleep=pauses.append).render("m", {"prompt": "a red fox"})
    assert urls == [stub.url + "/files/j2/0.png"]


def test_render_survives_an_outage(pauses):
    with StubService(fail_generate=1) as stub:
        urls = HastyClient(stub.url, "key", sleep=pauses.append).render("m", {"prompt": "a red fox"})
    assert len(urls) == 1
    assert [p for m, p, _ in stub.requests if m == "POST"] == ["/v1/quotes", "/v1/generate", "/v1/generate"]


def test_the_same_input_is_quoted_once(pauses):
    with StubService() as stub:
        client = HastyClient(stub.url, "key", sleep=pauses.append)
        client.render("m", {"prompt": "a red fox"})
        client.render("m", {"prompt": "a red fox"})
    assert [p for _, p, _ in stub.requests].count("/v1/quotes") == 1  # "a request saved"


def test_the_careful_client_passes_the_same_tests(pauses):
    with StubService(fail_generate=1) as stub:
        client = CarefulClient(stub.url, "key", sleep=pauses.append)
        assert client.render("m", {"prompt": "a red fox"}) == [PNG]
        assert client.render("m", {"prompt": "a red fox"}) == [PNG]
    keys = [h.get("Idempotency-Key") for m, p, h in stub.requests if p == "/v1/generate"]
    assert len(keys) == 3 and keys[0] == keys[1] != keys[2]  # the retry kept its key
