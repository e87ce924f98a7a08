"""A client test suite against mediagen-emulator, with pytest and the mediagen_emulator package.

The `mediagen` fixture gives each test a tenant of its own on one emulator (started once for the
run, with a skipping clock), so tests may run in parallel (python -m pytest -n 4) without seeing
each other's jobs, balances or clocks. The tiny `Client` below stands in for your client library.

On the skipping clock time stands still, but a request that waits on a job (wait=true, a poll
of a job not yet terminal) moves it to the job's next transition at once: a wait=true answers
the finished job in milliseconds, with the simulated timestamps. A test that looks at a job
while it is queued or running asks for the manual clock: @pytest.mark.mediagen_clock("manual").

    pip install ./clients/python          # or: PYTHONPATH=clients/python/src ... -p mediagen_emulator.pytest_plugin
    MEDIAGEN_EMULATOR_BIN=./mediagen-emulator python -m pytest examples/python
"""

import json
import threading
import urllib.error
import urllib.request

import pytest

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Client:
    """The client under test: base URL and key, as it would take for the hosted service."""

    def __init__(self, base_url, api_key):
        self.base_url, self.api_key = base_url, api_key

    def call(self, method, path, body=None, headers=None):
        url = path if path.startswith("http") else self.base_url + path
        hdrs = dict(headers or {})
        if not path.startswith("http"):  # the key goes to the API; an output's URL needs none
            hdrs["Authorization"] = "Bearer " + self.api_key
        data = None if body is None else json.dumps(body).encode()
        if data:
            hdrs["Content-Type"] = "application/json"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data, hdrs, method=method), timeout=60) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as err:
            with err:
                return err.code, err.headers, err.read()

    def json(self, method, path, body=None, headers=None, want=200):
        status, _, raw = self.call(method, path, body, headers)
        assert status == want, raw
        return json.loads(raw)

    def generate(self, model, data, key, wait=False, headers=None):
        quote = self.json("POST", "/v1/quotes", {"model": model, "input": data})
        status, _, raw = self.call("POST", "/v1/generate" + ("?wait=true" if wait else ""),
                                   {"model": model, "input": data, "quote_id": quote["quote_id"]},
                                   {"Idempotency-Key": key, **(headers or {})})
        return status, json.loads(raw)


@pytest.fixture
def client(mediagen):
    # The tenant's key form (mg_test_all.<tenant>) chooses the tenant; no other change needed.
    return Client(mediagen.base_url, mediagen.api_key)


@pytest.fixture
def model(client):
    return client.json("GET", "/v1/models?category=text-to-image&limit=1")["data"][0]["id"]


def test_quote_generate_and_download(client, model, mediagen):
    # The skipping clock: the wait=true answers the finished job at once.
    status, done = client.generate(model, {"prompt": "a red fox", "output_format": "png"}, "order-1", wait=True)
    assert (status, done["status"], done["credit_status"]) == (200, "succeeded", "charged")

    output = done["outputs"][0]
    status, headers, body = client.call("GET", output["url"])
    assert (status, headers["Content-Type"], body[:8]) == (200, "image/png", PNG_SIGNATURE)
    assert len(body) == output["size_bytes"]
    assert mediagen.control.balance("acct_all")["charged"] == done["credits"]
    assert mediagen.control.report()["findings"] == []  # the client behaved as the service expects


def test_polling_sees_the_job_move_on(client, model):
    status, job = client.generate(model, {"prompt": "a red fox"}, "order-3")
    assert (status, job["status"]) == (202, "queued")
    seen = []
    while job["status"] in ("queued", "running"):  # each poll moves the skipping clock on
        job = client.json("GET", "/v1/jobs/" + job["id"])
        seen.append(job["status"])
    assert seen == ["running", "succeeded"]


@pytest.mark.mediagen_clock("manual")  # the generation waits until the test moves the clock
def test_wait_true_with_a_manual_clock(client, model, mediagen):
    answer = {}
    waiter = threading.Thread(target=lambda: answer.update(
        r=client.generate(model, {"prompt": "a red fox"}, "order-2", wait=True)))
    waiter.start()
    mediagen.control.wait_for_waiting(1)  # the generation now waits on its job...
    mediagen.control.advance("1m")        # ...so moving the clock finishes it
    waiter.join()
    status, job = answer["r"]
    assert (status, job["status"]) == (200, "succeeded")


@pytest.mark.parametrize("data, headers", [
    ({"prompt": "a red fox"}, {"X-Emulator-Outcome": "fail"}),
    ({"prompt": "a red fox [emulator:fail]"}, {}),
], ids=["header", "token"])
def test_a_forced_failure_refunds(client, model, mediagen, data, headers):
    before = mediagen.control.balance("acct_all")
    _, job = client.generate(model, data, "fail-1", headers=headers)
    mediagen.control.advance("1m")
    failed = client.json("GET", "/v1/jobs/" + job["id"])
    assert (failed["status"], failed["error"]["code"], failed["credit_status"]) == ("failed", "generation_failed", "refunded")
    after = mediagen.control.balance("acct_all")
    assert [after[k] for k in ("available", "held", "charged")] == [before[k] for k in ("available", "held", "charged")]
    assert after["refunded"] - before["refunded"] == job["credits"]


def test_a_quote_expires(client, model, mediagen):
    quote = client.json("POST", "/v1/quotes", {"model": model, "input": {"prompt": "a red fox"}})
    mediagen.control.advance("10m1s")  # quotes live 10 minutes
    problem = client.json("POST", "/v1/generate", {"model": model, "input": {"prompt": "a red fox"}, "quote_id": quote["quote_id"]},
                          {"Idempotency-Key": "late"}, want=422)
    assert problem["code"] == "quote_expired"


def test_surviving_a_fault(client, mediagen):
    mediagen.control.add_fault(match={"path": "/v1/models"}, status=503, count=1)
    assert client.call("GET", "/v1/models")[0] == 503  # your client would retry here
    assert client.call("GET", "/v1/models")[0] == 200
    assert [e["status"] for e in mediagen.control.requests(path="/v1/models")] == [503, 200]
