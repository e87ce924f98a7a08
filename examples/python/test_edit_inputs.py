"""Edits against an emulator that fetches inputs as the hosted service does (--inputs fetch):
the careful client uploads its image and gets outputs of the image's size, with a clean report;
the hasty client sends a URL of its own machine, which is refused before anything is held, and
the report names it (unreachable-input-url).

This module starts its own emulator, since inputs are fetched only when asked for; it needs the
binary (MEDIAGEN_EMULATOR_BIN) even when the other tests attach to a running emulator."""

import struct
import zlib

import pytest

from careful_client import CarefulClient
from careful_client import ServiceError as CarefulError
from hasty_client import HastyClient
from hasty_client import ServiceError as HastyError
from mediagen_emulator import Emulator, find_binary

MODEL = "fal-ai/flux/dev/image-to-image"


def png(width, height):
    """A plain width×height PNG."""
    raw = b"".join(b"\x00" + b"\x30\x80\xc0" * width for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def image_size(data):
    """A PNG's or a JPEG's (width, height), read from its bytes."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", data[16:24])
    assert data[:2] == b"\xff\xd8", data[:4]
    at = 2
    while at < len(data):
        marker, length = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start of frame
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    raise AssertionError("no frame in the JPEG")


@pytest.fixture(scope="module")
def fetching():
    binary = find_binary()
    if binary is None:
        pytest.skip("no emulator binary (set MEDIAGEN_EMULATOR_BIN)")
    with Emulator.start(binary, seed=1, clock="manual", args=["--inputs", "fetch"]) as emu:
        yield emu


def test_the_careful_client_uploads_its_image(fetching):
    tenant = fetching.new_tenant("careful-edit")
    client = CarefulClient(tenant.base_url, tenant.api_key, sleep=tenant.control.advance)
    image = png(640, 480)
    files = client.edit(MODEL, image, {"prompt": "the same cat in snow", "num_images": 2})
    # The outputs have the input's size: as the job describes them, and as their bytes are.
    assert [(o["width"], o["height"]) for o in client.outputs] == [(640, 480), (640, 480)]
    assert [image_size(f) for f in files] == [(640, 480), (640, 480)]
    # The same image again: its upload is reused, not sent again.
    assert client.edit(MODEL, image, {"prompt": "the same cat at night"})
    [upload] = tenant.control.uploads()
    assert upload["job_count"] == 2 and (upload["width"], upload["height"]) == (640, 480), upload
    tenant.control.assert_requested(1, method="POST", path="/v1/uploads")
    assert tenant.control.report()["findings"] == []
    tenant.control.assert_no_unexpected()


def test_the_careful_client_uploads_again_after_an_expiry(fetching):
    """A line longer than the upload's life (one job at a time, behind a long one): the edit's
    job fails input_expired as it starts, its hold refunded, and the careful client uploads the
    file again and renders it."""
    tenant = fetching.new_tenant("careful-late")
    tenant.control.set_scenario(document={"name": "busy", "inputs": {"upload_ttl": "1m"}, "concurrency": [{"limit": 1}],
                                          "defaults": {"run": "90s", "queue_timeout": "10m"}})
    tenant.control.expect_error(code="input_expired")
    client = CarefulClient(tenant.base_url, tenant.api_key, sleep=tenant.control.advance)
    ahead = client.call("POST", "/v1/quotes", {"model": "fal-ai/flux/dev", "input": {"prompt": "a long job ahead"}})
    client.generate("fal-ai/flux/dev", {"prompt": "a long job ahead"}, ahead["quote_id"])
    assert client.edit(MODEL, png(320, 200), {"prompt": "a cat"})
    assert [(o["width"], o["height"]) for o in client.outputs] == [(320, 200)]
    tenant.control.assert_requested(2, method="POST", path="/v1/uploads")
    assert tenant.control.balance("acct_all")["refunded"] > 0  # the expired job's hold came back


def test_the_hasty_clients_localhost_url_is_refused_and_reported(fetching):
    tenant = fetching.new_tenant("hasty-edit")
    client = HastyClient(tenant.base_url, tenant.api_key, sleep=tenant.control.advance)
    with pytest.raises(HastyError) as refused:
        client.edit(MODEL, {"prompt": "the same cat in snow"})
    assert refused.value.status == 422 and '"input_url_refused"' in refused.value.body
    assert '"/input/image_url"' in refused.value.body
    assert tenant.control.balance("acct_all")["held"] == 0  # refused before anything was held
    assert "unreachable-input-url" in {f["rule"] for f in tenant.control.report()["findings"]}


def test_the_careful_client_is_told_so_too(fetching):
    """What the careful client would never send, sent through it all the same, is refused as
    it is for the hasty one: the refusal is the service's, not the client's."""
    tenant = fetching.new_tenant("careful-refused")
    client = CarefulClient(tenant.base_url, tenant.api_key, sleep=tenant.control.advance)
    with pytest.raises(CarefulError) as refused:
        client.render(MODEL, {"prompt": "a cat", "image_url": "http://127.0.0.1:8000/cat.png"})
    assert refused.value.status == 422 and refused.value.problem()["rule"] == "loopback_address"
