"""What real services do beyond the contract, met by both clients: a partial result, a prompt
the content policy refuses (asked for twice) and a deprecated model (asked for twice). The
report names the hasty client's retry-unchanged and deprecated-model-used; the careful client
gets a clean report."""

import pytest

from careful_client import CarefulClient
from careful_client import ServiceError as CarefulError
from hasty_client import HastyClient
from hasty_client import ServiceError as HastyError

# FLUX.1 [schnell] deprecated long ago, FLUX.1 [dev] its successor.
RETIRING = {"name": "real-service", "lifecycle": [
    {"match": {"model": "fal-ai/flux/schnell"}, "deprecated_at": "2000-01-01T00:00:00Z", "replacement": "fal-ai/flux/dev"}]}


def run(client, control):
    control.set_scenario(document=RETIRING)
    control.expect_error(status=422, code="content_policy_violation")  # the refusals are the test's own doing
    outputs = client.render("fal-ai/flux/dev", {"prompt": "four foxes [emulator:partial]", "num_images": 4})
    assert 1 <= len(outputs) < 4
    for _ in range(2):
        with pytest.raises((HastyError, CarefulError)) as refused:
            client.render("fal-ai/flux/dev", {"prompt": "a fox [emulator:refuse]"})
        assert refused.value.status == 422 and "content_policy_violation" in refused.value.body
    for _ in range(2):
        assert client.render("fal-ai/flux/schnell", {"prompt": "a lighthouse at dawn"})
    control.advance("2h")


def test_the_report_names_the_hasty_clients_real_service_flaws(mediagen):
    control = mediagen.control
    run(HastyClient(mediagen.base_url, mediagen.api_key, sleep=control.advance), control)
    rules = {f["rule"] for f in control.report()["findings"]}
    assert {"retry-unchanged", "deprecated-model-used"} <= rules


def test_the_careful_client_handles_refusals_partials_and_deprecation(mediagen):
    control = mediagen.control
    client = CarefulClient(mediagen.base_url, mediagen.api_key, sleep=control.advance)
    run(client, control)
    assert control.report()["findings"] == []
    assert client.model == "fal-ai/flux/dev"  # it moved to the successor
    # One refusal was sent; the second was known and never left the client.
    control.assert_requested(1, method="POST", path="/v1/generate", status=422)
