"""The two example clients against mediagen-emulator, each run as explore and the conformance
battery run it: a command with MEDIAGEN_EMULATOR_URL, MEDIAGEN_API_KEY and MEDIAGEN_TASK.

    PYTHONPATH=clients/python/src MEDIAGEN_EMULATOR_BIN=./mediagen-emulator \
        python -m pytest -p mediagen_emulator.pytest_plugin examples/explore

Under each adversity the careful client ends as it should and the emulator's report finds nothing
in it; the buggy client's one bug is named by the report (new-key-on-retry).
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import careful_client  # noqa: E402

GENERATE = {"method": "POST", "path": "/v1/generate"}


def run(tenant, client, tmp_path, prompt="a red fox"):
    """Runs one example client on a task in the tenant; its exit status and saved files."""
    out = tmp_path / "out"
    task = {"model": "fal-ai/flux/schnell", "input": {"prompt": prompt}, "output_dir": str(out)}
    env = dict(os.environ, MEDIAGEN_EMULATOR_URL=tenant.base_url, MEDIAGEN_API_KEY=tenant.api_key,
               MEDIAGEN_TASK=json.dumps(task))
    done = subprocess.run([sys.executable, os.path.join(HERE, client)], env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, sorted(out.iterdir()) if out.exists() else [], done.stderr


def findings(tenant):
    return sorted({f["rule"] for f in tenant.control.report()["findings"]})


def charged_jobs(tenant):
    return [j for j in tenant.control.call("GET", "/_emulator/jobs")["data"] if j.get("credit_status") == "charged"]


@pytest.mark.parametrize("fault", [
    {"status": 503, "retry_after": 1},
    {"status": 429, "retry_after": 1, "retry_after_format": "date"},
    {"action": "reset"},
    {"action": "truncated"},
    {"action": "malformed"},
    {"action": "gateway"},
], ids=lambda f: f.get("action") or str(f["status"]) + "-" + f.get("retry_after_format", "seconds"))
def test_careful_client_survives_a_lost_generation(mediagen, tmp_path, fault):
    mediagen.control.add_fault(dict(fault, match=GENERATE, count=1))
    code, files, err = run(mediagen, "careful_client.py", tmp_path)
    assert code == 0, err
    assert len(files) == 1 and files[0].stat().st_size > 0
    assert findings(mediagen) == []
    assert len(charged_jobs(mediagen)) == 1


def test_buggy_client_retries_with_a_fresh_key(mediagen, tmp_path):
    mediagen.control.add_fault(match=GENERATE, status=503, count=1)
    code, files, err = run(mediagen, "buggy_client.py", tmp_path)
    assert code == 0, err  # it looks fine from outside
    assert "new-key-on-retry" in findings(mediagen)


def test_a_failed_job_is_not_generated_again(mediagen, tmp_path):
    code, files, err = run(mediagen, "careful_client.py", tmp_path, prompt="a fox [emulator:fail]")
    assert code == 1, err
    assert files == []
    assert len(mediagen.control.requests(**GENERATE)) == 1
    assert findings(mediagen) == []


def test_a_refusal_is_not_sent_again(mediagen, tmp_path):
    code, files, err = run(mediagen, "careful_client.py", tmp_path, prompt="a fox [emulator:refuse]")
    assert code == 1, err
    assert [e["status"] for e in mediagen.control.requests(**GENERATE)] == [422]
    assert findings(mediagen) == []


class Recorder(careful_client.Client):
    """The careful client, keeping each file request's Range and answer (files are not in the
    emulator's journal of /v1 requests)."""

    def __init__(self, tenant):
        super().__init__(tenant.base_url, tenant.api_key, log=lambda msg: None)
        self.files = []

    def send(self, method, url, body=None, headers=None, auth=True):
        answer = super().send(method, url, body, headers, auth)
        if "/files/" in url:
            self.files.append(((headers or {}).get("Range"), answer.status, answer.complete))
        return answer


def test_a_cut_download_is_resumed(mediagen, tmp_path):
    mediagen.control.add_fault(match={"method": "GET", "path": "/files/**"}, download={"cut_after": 1000}, count=2)
    client = Recorder(mediagen)
    paths = client.render("fal-ai/flux/schnell", {"prompt": "a red fox"}, str(tmp_path))
    assert client.files == [(None, 200, False), ("bytes=1000-", 206, False), ("bytes=2000-", 206, True)]
    assert os.path.getsize(paths[0]) == charged_jobs(mediagen)[0]["outputs"][0]["size_bytes"]
    assert findings(mediagen) == []


def test_an_expired_link_is_refreshed_by_reading_the_job(mediagen, tmp_path):
    mediagen.control.set_scenario(document={"defaults": {"download": {"url_ttl": "1m"}}})

    class LateClient(Recorder):
        def save_outputs(self, job, output_dir):
            mediagen.control.advance("5m")  # the client paused: every link it holds expired
            return super().save_outputs(job, output_dir)

    client = LateClient(mediagen)
    assert len(client.render("fal-ai/flux/schnell", {"prompt": "a red fox"}, str(tmp_path))) == 1
    assert [status for _, status, _ in client.files] == [403, 200]
    assert [e["method"] for e in mediagen.control.requests(path="/v1/jobs/*")] == ["GET"]
    assert findings(mediagen) == []


def test_a_quote_expired_before_the_generation_is_made_again(mediagen, tmp_path):
    class SlowClient(careful_client.Client):
        quoted = 0

        def json(self, method, path, body=None, headers=None):
            answer = super().json(method, path, body, headers)
            if path == "/v1/quotes" and not self.quoted:
                self.quoted += 1
                mediagen.control.advance("15m")  # longer than the quote lives
            return answer

    client = SlowClient(mediagen.base_url, mediagen.api_key, log=lambda msg: None)
    assert len(client.render("fal-ai/flux/schnell", {"prompt": "a red fox"}, str(tmp_path))) == 1
    assert [e["status"] for e in mediagen.control.requests(**GENERATE)] == [422, 200]
    assert len(charged_jobs(mediagen)) == 1


def test_unknown_members_and_statuses_are_tolerated(mediagen, tmp_path):
    mediagen.control.set_scenario(document={"evolution": True})
    code, files, err = run(mediagen, "careful_client.py", tmp_path)
    assert code == 0, err
    assert findings(mediagen) == []
