"""The emulator's image under Testcontainers, with the mediagen_emulator pytest plugin: this
mediagen_server fixture replaces the plugin's, and the plugin's `mediagen` fixture gives every
test a tenant of its own on the container."""

import json
import os
import urllib.request

import pytest
from testcontainers.core.container import DockerContainer
from testcontainers.core.waiting_utils import wait_for_logs

from mediagen_emulator import Emulator

IMAGE = os.environ.get("MEDIAGEN_IMAGE", "ghcr.io/mediagen/mediagen-emulator:latest")
TOKEN = "testcontainers-admin-token"  # the control API is off in a container without one


@pytest.fixture(scope="session")
def mediagen_server():
    container = (DockerContainer(IMAGE).with_exposed_ports(8080)
                 .with_env("MEDIAGEN_CLOCK", "manual").with_env("MEDIAGEN_SEED", "42")
                 .with_env("MEDIAGEN_ADMIN_TOKEN", TOKEN))
    with container:
        wait_for_logs(container, "listening on", timeout=60)
        url = "http://%s:%s" % (container.get_container_host_ip(), container.get_exposed_port(8080))
        yield Emulator.attach(url, admin_token=TOKEN)


def post(tenant, path, body, **headers):
    req = urllib.request.Request(tenant.base_url + path, json.dumps(body).encode(), method="POST", headers={
        "Authorization": "Bearer " + tenant.api_key, "Content-Type": "application/json", **headers})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def test_generation_succeeds_once_the_clock_moves(mediagen):
    data = {"prompt": "a red fox"}
    quote = post(mediagen, "/v1/quotes", {"model": "fal-ai/flux/dev", "input": data})
    job = post(mediagen, "/v1/generate", {"model": "fal-ai/flux/dev", "input": data, "quote_id": quote["quote_id"]},
               **{"Idempotency-Key": "k1"})
    assert job["status"] == "queued"
    done = mediagen.control.complete_job(job["id"])
    assert done["status"] == "succeeded" and done["credit_status"] == "charged"
