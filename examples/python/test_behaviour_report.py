"""The hasty and the careful client against the emulator: the same calls, the same faults, and
the emulator's report says what each did wrong. Each client waits through the tenant's manual
clock (sleep=control.advance), so Retry-After, polling pace and expiry are judged on the
emulator's time and the test never sleeps."""

import pytest

from careful_client import CarefulClient
from careful_client import ServiceError as CarefulError
from hasty_client import HastyClient
from hasty_client import ServiceError as HastyError

# Each client sleeps by advancing the tenant's clock, so it stands still otherwise.
pytestmark = pytest.mark.mediagen_clock("manual")

FLAWS = {"new-key-on-retry", "retry-after-ignored", "poll-too-fast", "quote-reused", "outputs-never-downloaded"}


@pytest.fixture
def model(mediagen):
    client = CarefulClient(mediagen.base_url, mediagen.api_key)
    return client.call("GET", "/v1/models?category=text-to-image&limit=1")["data"][0]["id"]


def run(client, control, model):
    """The same day for either client: an outage answers its first generation, then it renders
    the same input again, then one whose job fails, and the outputs' time to live passes."""
    control.add_fault(match={"method": "POST", "path": "/v1/generate"}, status=503, retry_after=5, count=1)
    control.expect_error(status=503, code="service_unavailable")  # the outage is the test's own doing
    assert client.render(model, {"prompt": "a red fox"})
    assert client.render(model, {"prompt": "a red fox"})
    with pytest.raises((HastyError, CarefulError)) as failed:  # the token forces this job's outcome
        client.render(model, {"prompt": "a red fox [emulator:fail]"})
    assert failed.value.status == "failed"
    control.advance("2h")
    # Both clients met the cases this test is for.
    assert control.coverage(require=["POST /v1/generate 503 *", "job failed generation_failed"])["required_missing"] == []


def test_the_report_names_each_flaw_of_the_hasty_client(mediagen, model):
    control = mediagen.control
    run(HastyClient(mediagen.base_url, mediagen.api_key, sleep=control.advance), control, model)

    report = control.report()
    assert {f["rule"] for f in report["findings"]} == FLAWS
    for finding in report["findings"]:
        assert finding["entries"] and finding["reason"]
    # The reused quote answered 409; nothing declared it expected, so it is "unexpected".
    assert [u["entry"]["code"] for u in control.unexpected_errors()] == ["quote_already_used"]
    # Five tries (503 then 202; 409 then 202; 202), each with a key of its own.
    keys = [e.get("idempotency_key") for e in control.requests(method="POST", path="/v1/generate")]
    assert len(keys) == 5 and len(set(keys)) == 5


def test_the_careful_client_gets_a_clean_report(mediagen, model):
    control = mediagen.control
    run(CarefulClient(mediagen.base_url, mediagen.api_key, sleep=control.advance), control, model)

    assert control.report()["findings"] == []
    control.assert_no_unexpected()
    # The retry after the outage sent the same key as the try that met it.
    first_key = control.requests(method="POST", path="/v1/generate")[0]["idempotency_key"]
    control.assert_requested(2, method="POST", path="/v1/generate", headers={"Idempotency-Key": first_key})
    control.assert_requested(1, method="POST", path="/v1/generate", status=503, headers={"Idempotency-Key": first_key})


def test_the_careful_client_in_an_evolving_api(mediagen, model):
    """A scenario's evolution (undocumented members, a header, a status `preparing`, a model of
    output type 3d): the careful client, which waits until a status is terminal and reads only
    the members it knows, renders as before and still gets a clean report."""
    control = mediagen.control
    control.set_scenario(document={"name": "evolving", "evolution": True})
    client = CarefulClient(mediagen.base_url, mediagen.api_key, sleep=control.advance)
    assert client.render(model, {"prompt": "a lighthouse"})
    assert control.coverage(require=["evolution member", "evolution header"])["required_missing"] == []
    assert control.report()["findings"] == []
    control.assert_no_unexpected()


class SlowConsumer(CarefulClient):
    """The careful client, its first download reached only after the output's signed link has
    expired, as a consumer that takes its time would find it."""

    def __init__(self, *args, control, **kwargs):
        super().__init__(*args, **kwargs)
        self.control, self.late = control, True

    def download(self, url):
        if self.late:
            self.late = False
            self.control.advance("2m")  # past the scenario's one-minute links
        return super().download(url)


def test_the_careful_client_refreshes_an_expired_link(mediagen, model):
    """Signed links that expire (a scenario's download.url_ttl): a link answered 403 is not
    fetched again; the careful client reads the job for a fresh one, and sends no key with it."""
    control = mediagen.control
    control.set_scenario(document={"name": "signed-links",
                                   "defaults": {"download": {"url_ttl": "1m", "reject_authorization": True}}})
    client = SlowConsumer(mediagen.base_url, mediagen.api_key, sleep=control.advance, control=control)
    files = client.render(model, {"prompt": "a lighthouse at dawn"})
    assert files and all(files)
    assert not client.late  # the link did expire before the first download
    assert control.report()["findings"] == []
    assert control.coverage(require=["link expired", "link refreshed"])["required_missing"] == []
    control.assert_no_unexpected()


def test_the_careful_client_waits_in_a_concurrency_queue(mediagen, model):
    """One job of the account at a time, each running a minute (a scenario's concurrency): the
    careful client's job waits behind two others, its place moving up, and renders without
    giving up on it; the report finds nothing."""
    control = mediagen.control
    control.set_scenario(document={"name": "one-at-a-time", "defaults": {"run": "1m"},
                                   "concurrency": [{"limit": 1}]})
    busy = CarefulClient(mediagen.base_url, mediagen.api_key)
    for prompt in ("a first job", "a second job"):  # another part of the program fills the line
        quote = busy.call("POST", "/v1/quotes", {"model": model, "input": {"prompt": prompt}})
        busy.generate(model, {"prompt": prompt}, quote["quote_id"])
    client = CarefulClient(mediagen.base_url, mediagen.api_key, sleep=control.advance)
    assert client.render(model, {"prompt": "a lighthouse"})
    assert client.positions == [2, 1]
    assert control.coverage(require=["queued behind a concurrency limit"])["required_missing"] == []
    assert control.report()["findings"] == []
    control.assert_no_unexpected()


def test_the_careful_client_waits_out_concurrency_limited(mediagen, model):
    """A limit that refuses (over: reject): the careful client waits what Retry-After asks and
    sends the same generation again with the same key; the 429 held nothing, so the retry makes
    the job. The hasty client retries at once and is told so."""
    control = mediagen.control
    scenario = {"name": "one-or-429", "defaults": {"run": "1m"}, "concurrency": [{"limit": 1, "over": "reject"}]}
    control.set_scenario(document=scenario)
    busy = CarefulClient(mediagen.base_url, mediagen.api_key)
    quote = busy.call("POST", "/v1/quotes", {"model": model, "input": {"prompt": "a first job"}})
    busy.generate(model, {"prompt": "a first job"}, quote["quote_id"])
    control.expect_error(status=429, code="concurrency_limited")  # the limit is the test's own doing
    client = CarefulClient(mediagen.base_url, mediagen.api_key, sleep=control.advance)
    assert client.render(model, {"prompt": "a lighthouse"})
    keys = [e.get("idempotency_key") for e in control.requests(method="POST", path="/v1/generate")]
    assert len(keys) == 3 and keys[1] == keys[2]  # the first job's, then the careful one's twice
    assert control.coverage(require=["POST /v1/generate 429 concurrency_limited"])["required_missing"] == []
    assert control.report()["findings"] == []

    control.reset()
    control.set_scenario(document=scenario)
    quote = busy.call("POST", "/v1/quotes", {"model": model, "input": {"prompt": "a first job"}})
    busy.generate(model, {"prompt": "a first job"}, quote["quote_id"])
    with pytest.raises(HastyError):
        HastyClient(mediagen.base_url, mediagen.api_key, sleep=control.advance).render(model, {"prompt": "a harbour"})
    assert "retry-after-ignored" in {f["rule"] for f in control.report()["findings"]}
