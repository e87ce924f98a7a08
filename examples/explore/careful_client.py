#!/usr/bin/env python3
"""A small client of the media generation service that survives what a real network does to it.

It quotes, generates with ?wait=true and downloads the outputs, with the Python standard library
only. Configured like production, from the environment:

    MEDIAGEN_EMULATOR_URL   the service (default http://127.0.0.1:8080)
    MEDIAGEN_API_KEY        the key (default mg_test_all)
    MEDIAGEN_TASK           optional JSON {"model", "input", "output_dir"}: one generation to do;
                            without it, one image of fal-ai/flux/schnell, kept in a temporary folder

Exit status: 0 with the outputs saved; 1 when the job failed, was refused, or the service could
not be reached after the retries; 2 when MEDIAGEN_TASK cannot be read. The same file is a
conformance adapter (`mediagen-emulator conformance --adapter "python3 careful_client.py"`) and
a command for `mediagen-emulator explore`. What keeps it correct is marked "Careful:";
buggy_client.py breaks exactly one of those rules.
"""

import email.utils
import http.client
import json
import os
import shutil
import socket
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

TERMINAL = {"succeeded", "failed", "canceled", "expired"}
# Careful: only answers that may succeed unchanged later are retried. A 4xx other than 429 (a
# refusal, a bad input, no credits) would fail again the same way.
RETRYABLE = {429, 500, 502, 503, 504}
ATTEMPTS = 8  # tries of one request before giving up
# Careful: Retry-After is waited for in full, in real time: the service judges the wait on its
# clock or in real time, and a clock that skips does not move while the client sleeps. A longer
# Retry-After than this is not waited for: the client gives up instead of retrying early.
MAX_RETRY_AFTER = 30.0
EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "video/mp4": ".mp4",
              "audio/wav": ".wav", "audio/mpeg": ".mp3"}
DEFAULT_TASK = {"model": "fal-ai/flux/schnell", "input": {"prompt": "a red fox in the snow"}}

# Straight to the service: a proxy from HTTP_PROXY would see (and usually refuse) loopback addresses.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Failed(Exception):
    """The generation cannot succeed: the job failed, the input was refused, or retries ran out;
    `code` is the problem code the service answered, if any, and `problem` its whole body."""

    def __init__(self, message, code=None, problem=None):
        super().__init__(message)
        self.code, self.problem = code, problem or {}


class Answer:
    """One HTTP answer: status, headers and body; status None when none came whole."""

    def __init__(self, status, headers, body, complete=True):
        self.status, self.headers, self.body, self.complete = status, headers, body, complete

    def problem(self):
        """The problem body's members, or {} when the body is not one."""
        try:
            doc = json.loads(self.body)
        except ValueError:
            return {}
        return doc if isinstance(doc, dict) else {}


def successor_of(headers):
    """The model a deprecated model's answer names as its successor-version, or None: Deprecation
    (RFC 9745) says the model is deprecated, Link (RFC 8288) names the model to move to."""
    if not headers or not headers.get("Deprecation"):
        return None
    for value in headers.get_all("Link") or []:
        for link in value.split(","):
            target, _, params = link.partition(";")
            if 'rel="successor-version"' in params:
                return target.strip().strip("<>").rsplit("/v1/models/", 1)[-1]
    return None


def retry_after(answer):
    """Seconds the answer asks to wait before the next try (Retry-After as seconds or as an HTTP
    date), or None when it names none."""
    value = (answer.headers.get("Retry-After") or "").strip() if answer.headers else ""
    if not value:
        return None
    if value.isdigit():
        return float(value)
    when = email.utils.parsedate_to_datetime(value) if "," in value else None
    if when is None:
        return None
    # Careful: the date is on the service's clock, which need not be this machine's: measure it
    # from the answer's own Date.
    sent = answer.headers.get("Date")
    base = email.utils.parsedate_to_datetime(sent).timestamp() if sent else time.time()
    return max(0.0, when.timestamp() - base)


class Client:
    def __init__(self, base_url, api_key, sleep=time.sleep, log=None):
        self.base_url, self.api_key, self.sleep = base_url.rstrip("/"), api_key, sleep
        self.log = log or (lambda msg: print(msg, file=sys.stderr))
        self.headers = {}  # the headers of the last API answer

    # --- one generation ----------------------------------------------------------------------

    def render(self, model, data, output_dir):
        """Quotes, generates, waits for the job and saves every output in output_dir; returns the
        files' paths. Raises Failed when the generation cannot succeed."""
        for _ in range(4):
            try:
                quote = self.json("POST", "/v1/quotes", {"model": model, "input": data})  # Careful: a quote per generation
            except Failed as err:
                if err.code == "model_retired" and err.problem.get("replacement"):
                    model = self.move(model, err.problem["replacement"])
                    continue
                raise
            successor = successor_of(self.headers)
            if successor and successor != model:
                # Careful: the answer says the model is deprecated; move before generating on it.
                model = self.move(model, successor)
                continue
            # Careful: one key per generation, made once and sent again on every retry, so that a
            # retry of an attempt that did reach the service answers the same job instead of
            # making (and charging) a second one.
            key = str(uuid.uuid4())
            body = {"model": model, "input": data, "quote_id": quote["quote_id"]}
            try:
                job = self.json("POST", "/v1/generate?wait=true", body, {"Idempotency-Key": key})
            except Failed as err:
                if err.code == "quote_expired":
                    # Careful: an expired quote made nothing; a new quote is a new generation, so
                    # a new key is right here.
                    self.log("the quote expired before the generation: quoting again")
                    continue
                if err.code == "model_retired" and err.problem.get("replacement"):
                    model = self.move(model, err.problem["replacement"])
                    continue
                raise
            job = self.wait(job, body, key)
            if job.get("status") != "succeeded":
                # Careful: a failed job is not generated again blindly: its credits came back, and
                # the same input would most likely fail again.
                raise Failed("job %s ended %s: %s" % (job.get("id"), job.get("status"), json.dumps(job.get("error"))))
            return self.save_outputs(job, output_dir)
        raise Failed("no generation of %s after its quotes expired or its model moved" % model)

    def move(self, model, successor):
        """The model to use instead of a deprecated or retired one (the input is the same)."""
        self.log("%s is deprecated or retired: moving to %s" % (model, successor))
        return successor

    def wait(self, job, body, key):
        """The job once it is terminal. Careful: waiting is a generation sent again with the same
        key and ?wait=true (the service answers the job as it stands, once it ends), never a fast
        poll; a status this client does not know is waited through like queued or running."""
        while job.get("status") not in TERMINAL:
            self.log("job %s is %s: waiting for it" % (job.get("id"), job.get("status")))
            self.sleep(0.2)  # a wait, not a poll; the pause only keeps a service answering at once from a busy loop
            job = self.json("POST", "/v1/generate?wait=true", body, {"Idempotency-Key": key})
        return job

    def save_outputs(self, job, output_dir):
        os.makedirs(output_dir, exist_ok=True)
        paths = []
        for index in range(len(job.get("outputs") or [])):  # Careful: outputs expire; fetch them now
            data, job = self.fetch_output(job, index)
            out = job["outputs"][index]
            path = os.path.join(output_dir, "%s-%d%s" % (job["id"], index, EXTENSIONS.get(out.get("content_type"), "")))
            with open(path, "wb") as f:
                f.write(data)
            paths.append(path)
        return paths

    def fetch_output(self, job, index):
        """The bytes of one output, and the job as last read. Careful: a signed link found expired
        (403) is never fetched again: a read of the job gives a fresh one. A download cut short is
        resumed with Range from the bytes already received."""
        got = b""
        for _ in range(ATTEMPTS * 2):
            out = job["outputs"][index]
            want = out.get("size_bytes")
            headers = {"Range": "bytes=%d-" % len(got)} if got else {}
            answer = self.send("GET", out["url"], headers=headers, auth=False)  # Careful: no API key on a file URL
            if answer.status == 206 and got:
                got += answer.body
            elif answer.status == 200:
                got = answer.body  # the whole file again (a server may ignore Range)
            elif answer.status == 416 and got:
                return got, job  # nothing is left after the bytes already received
            elif answer.status == 403:
                self.log("the link of output %d expired: reading the job for a fresh one" % index)
                job = self.json("GET", "/v1/jobs/" + job["id"])
                if index >= len(job.get("outputs") or []):
                    raise Failed("job %s no longer lists output %d" % (job["id"], index))
                continue
            elif answer.status is None or answer.status in RETRYABLE:
                self.pause(answer, 0)
                continue
            else:
                raise Failed("output %d of job %s: %s %s" % (index, job["id"], answer.status, answer.body[:200]))
            # The file's size, when the job gives it, says whether every byte came; a body cut
            # short or a Content-Length that does not match it are not trusted alone.
            if len(got) >= want if isinstance(want, int) else answer.complete:
                return got, job
            self.log("the download of output %d stopped at %d bytes: resuming" % (index, len(got)))
        raise Failed("output %d of job %s: the download never completed" % (index, job["id"]))

    # --- requests ----------------------------------------------------------------------------

    def json(self, method, path, body=None, headers=None):
        """One API request, retried while its answer is ambiguous or asks to be retried; the JSON
        answer. Careful: the request is sent again exactly as it was, its Idempotency-Key
        included: a 5xx, a dropped connection or a broken body does not say whether the service
        acted."""
        for attempt in range(ATTEMPTS):
            answer = self.send(method, path, body, headers)
            self.headers = answer.headers or {}
            if answer.status is not None and answer.status < 300 and answer.complete:
                try:
                    return json.loads(answer.body)  # Careful: members it does not know are kept, not refused
                except ValueError:
                    answer.status = None  # a broken body: nothing says what happened
            if answer.status is not None and answer.status not in RETRYABLE and answer.status >= 300:
                problem = answer.problem()
                raise Failed("%s %s: %s %s" % (method, path, answer.status, answer.body[:300].decode("utf-8", "replace")),
                             problem.get("code"), problem)  # Careful: a refusal or a bad input is never sent again as it is
            self.log("%s %s: %s; trying again" % (method, path, answer.status or "no whole answer"))
            self.pause(answer, attempt)
            headers = self.retry_headers(headers)
        raise Failed("%s %s: no answer after %d attempts" % (method, path, ATTEMPTS))

    def retry_headers(self, headers):
        """The headers of the next attempt: the same ones (buggy_client.py changes this)."""
        return headers

    def pause(self, answer, attempt):
        """Waits before the next attempt: Retry-After when the answer names it, else a short
        pause that grows."""
        wait = retry_after(answer)
        if wait is None:
            wait = min(0.05 * 2 ** attempt, 2.0)
        elif wait > MAX_RETRY_AFTER:
            raise Failed("the service asks to wait %.0f s before trying again" % wait)
        self.sleep(wait)

    def send(self, method, url, body=None, headers=None, auth=True):
        """One HTTP request; an Answer whose status is None when the connection dropped, and whose
        `complete` is False when the body was cut short."""
        url = url if url.startswith("http") else self.base_url + url
        hdrs = dict(headers or {})
        if auth:
            hdrs["Authorization"] = "Bearer " + self.api_key
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data, hdrs, method=method)
        try:
            try:
                resp = _opener.open(req, timeout=60)
            except urllib.error.HTTPError as err:
                resp = err
            with resp:
                answer = Answer(resp.code, resp.headers, b"")
                try:
                    answer.body, answer.complete = resp.read(), True
                except http.client.IncompleteRead as cut:
                    answer.body, answer.complete = cut.partial, False
                return answer
        except (urllib.error.URLError, http.client.HTTPException, OSError, socket.timeout):
            return Answer(None, None, b"", complete=False)


def main(client_class=Client):
    """Does the task of MEDIAGEN_TASK (or the default one) with a client_class; the exit status."""
    try:
        task = json.loads(os.environ["MEDIAGEN_TASK"]) if os.environ.get("MEDIAGEN_TASK") else dict(DEFAULT_TASK)
        model, data = task["model"], task.get("input") or {}
    except (ValueError, KeyError, TypeError) as err:
        print("MEDIAGEN_TASK is not a task {\"model\", \"input\", \"output_dir\"}: %s" % err, file=sys.stderr)
        return 2
    output_dir = task.get("output_dir") or tempfile.mkdtemp(prefix="mediagen-outputs-")
    client = client_class(os.environ.get("MEDIAGEN_EMULATOR_URL", "http://127.0.0.1:8080"),
                    os.environ.get("MEDIAGEN_API_KEY", "mg_test_all"))
    try:
        paths = client.render(model, data, output_dir)
    except Failed as err:
        print("failed: %s" % err, file=sys.stderr)
        return 1
    finally:
        if not task.get("output_dir"):
            shutil.rmtree(output_dir, ignore_errors=True)
    print("saved %d output%s: %s" % (len(paths), "" if len(paths) == 1 else "s", " ".join(paths)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
