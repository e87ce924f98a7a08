"""Media inputs from Python: an upload through Tenant.upload, used as an image-to-image input
whose outputs take its size, and a loopback URL refused before anything is held, against the
real emulator started with --inputs fetch."""

from __future__ import annotations

import json
import os
import re
import struct
import urllib.error
import urllib.request
import zlib

import pytest

from mediagen_emulator import Emulator, EmulatorError, find_binary

MODEL = "fal-ai/flux/dev/image-to-image"


def _png(width: int, height: int) -> bytes:
    """A plain width×height PNG."""
    raw = b"".join(b"\x00" + b"\xc8\x20\x20" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _post(tenant, path: str, body: dict, key: str = "") -> tuple:
    req = urllib.request.Request(tenant.base_url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": "Bearer " + tenant.api_key, "Content-Type": "application/json",
                                          "Idempotency-Key": key or "k"})
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.loads(err.read())


@pytest.fixture(scope="module")
def fetching():
    binary = find_binary()
    if binary is None:
        pytest.skip("no emulator binary (set MEDIAGEN_EMULATOR_BIN)")
    with Emulator.start(binary, seed=1, clock="skip", args=["--inputs", "fetch"]) as emu:
        yield emu


def test_upload_sets_the_output_size(fetching: Emulator, tmp_path):
    tenant = fetching.new_tenant("inputs")
    path = tmp_path / "cat.png"
    path.write_bytes(_png(640, 480))
    up = tenant.upload(path)  # a path, its type read from its bytes
    assert up["width"] == 640 and up["height"] == 480 and up["content_type"] == "image/png", up
    again = tenant.upload(_png(64, 48), "image/png")  # bytes
    assert again["url"] != up["url"]
    inp = {"image_url": up["url"], "prompt": "the same cat in snow", "num_images": 2}
    status, quote = _post(tenant, "/v1/quotes", {"model": MODEL, "input": inp})
    assert status == 200, quote
    status, job = _post(tenant, "/v1/generate?wait=true", {"model": MODEL, "input": inp, "quote_id": quote["quote_id"]}, "cat-1")
    assert status == 200 and job["status"] == "succeeded", job
    assert [(o["width"], o["height"]) for o in job["outputs"]] == [(640, 480), (640, 480)]


def test_loopback_url_refused_before_hold(fetching: Emulator):
    tenant = fetching.new_tenant("loopback")
    inp = {"image_url": "http://127.0.0.1:5173/cat.png", "prompt": "a cat"}
    status, quote = _post(tenant, "/v1/quotes", {"model": MODEL, "input": inp})
    assert status == 200, quote
    status, problem = _post(tenant, "/v1/generate", {"model": MODEL, "input": inp, "quote_id": quote["quote_id"]}, "cat-2")
    assert status == 422 and problem["code"] == "input_url_refused", problem
    assert problem["errors"][0]["pointer"] == "/input/image_url" and problem["rule"] == "loopback_address"
    assert tenant.control.balance("acct_all")["held"] == 0
    with pytest.raises(EmulatorError) as err:
        tenant.upload(b"not a media file", "text/plain")
    assert err.value.status == 415


def test_the_guides_careful_client(fetching: Emulator, tmp_path):
    guide = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "inputs.md")
    with open(guide, encoding="utf-8") as f:
        code = next(b for b in re.findall(r"```python\n(.*?)```", f.read(), re.S) if "def edit" in b)
    scope: dict = {}
    exec(compile(code, guide, "exec"), scope)
    path = tmp_path / "cat.png"
    path.write_bytes(_png(640, 480))
    job = scope["edit"](fetching.new_tenant("guide"), str(path), "the same cat in snow")
    assert job["status"] == "succeeded" and (job["outputs"][0]["width"], job["outputs"][0]["height"]) == (640, 480), job
    problem = scope["edit_from_localhost"](fetching.new_tenant("guide-local"), "a cat")
    assert problem["status"] == 422, problem


def test_uploads_and_media_inputs_listed(fetching: Emulator):
    tenant = fetching.new_tenant("listed")
    up = tenant.upload(_png(64, 48), "image/png")
    inp = {"image_url": up["url"], "prompt": "a cat"}
    status, quote = _post(tenant, "/v1/quotes", {"model": MODEL, "input": inp})
    assert status == 200, quote
    status, job = _post(tenant, "/v1/generate", {"model": MODEL, "input": inp, "quote_id": quote["quote_id"]}, "listed-1")
    assert status in (200, 202), job
    [listed] = tenant.control.uploads()
    assert listed["id"] == up["id"] and listed["jobs"] == [job["id"]] and listed["job_count"] == 1, listed
    assert (listed["width"], listed["height"], listed["account"]) == (64, 48, "acct_all"), listed
    [media] = tenant.control.job(job["id"])["media_inputs"]
    assert media["source"] == "upload" and media["upload"] == up["id"] and media["read"] is True, media
    assert (media["width"], media["height"]) == (64, 48), media
