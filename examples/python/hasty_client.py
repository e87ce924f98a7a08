"""A client of the media generation service with the shortcuts real clients take. Its own
tests (test_hasty_client.py) pass against a plain stub; against the emulator, the report names
every shortcut (test_behaviour_report.py). Each is marked "Flaw:" with the rule that catches it;
careful_client.py is the same client done right.

`sleep` is how it waits (time.sleep by default); a test passes `tenant.control.advance`.
"""

import http.client
import json
import time
import urllib.error
import urllib.request
import uuid


class ServiceError(Exception):
    """An answer the client gave up on."""

    def __init__(self, status, body):
        self.status, self.body = status, body
        super().__init__("%s: %s" % (status, body[:300]))


class HastyClient:
    def __init__(self, base_url, api_key, sleep=time.sleep):
        self.base_url, self.api_key, self.sleep = base_url.rstrip("/"), api_key, sleep
        # Flaw (quote-reused, expired-quote): quotes kept "to save a request"; a quote buys one
        # generation, and expires.
        self._quotes = {}

    def render(self, model, data):
        """Quotes, generates and waits for the job; returns the outputs' URLs."""
        # Flaw (deprecated-model-used): the Deprecation and Link headers of the answers are never
        # read, so a deprecated model is used until the day it is retired.
        job = self.wait(self.generate(model, data))
        if job["status"] != "succeeded":
            raise ServiceError(job["status"], json.dumps(job.get("error")))
        # Flaw (outputs-never-downloaded): the URLs are handed on "to fetch later"; they expire.
        return [o["url"] for o in job["outputs"]]

    def edit(self, model, data, image_path="cat.png"):
        """Renders a model that edits an image, served from the developer's machine."""
        # Flaw (unreachable-input-url): the image's URL is one of this machine, where it worked in
        # development; the hosted service fetches inputs from its own network, where 127.0.0.1 is
        # itself. The generation is refused (or, on a real service, fails when the job starts).
        return self.render(model, {**data, "image_url": "http://127.0.0.1:8000/" + image_path})

    def quote(self, model, data):
        cache_key = (model, json.dumps(data, sort_keys=True))
        if cache_key not in self._quotes:
            self._quotes[cache_key] = self.call("POST", "/v1/quotes", {"model": model, "input": data})[2]
        return self._quotes[cache_key]

    def generate(self, model, data):
        for _ in range(3):
            quote = self.quote(model, data)
            # Flaw (new-key-on-retry): a new key for every attempt. When the failed attempt did
            # reach the service, this one makes a second job, charged twice.
            key = str(uuid.uuid4())
            try:
                status, _, answer = self.call("POST", "/v1/generate", {"model": model, "input": data, "quote_id": quote["quote_id"]},
                                              {"Idempotency-Key": key})
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError):
                status, answer = None, None
            if status in (200, 202):
                return answer
            if status == 409 and answer.get("code") == "quote_already_used":
                self._quotes.clear()  # the cache "heals" itself: the wasted request stays
                continue
            if status is None or status == 429 or status >= 500:
                self.sleep(0.1)  # Flaw (retry-after-ignored): a fixed pause, whatever Retry-After says
                continue
            # Flaw (retry-unchanged): a refusal (422 content_policy_violation) is not remembered;
            # the next render of the same input sends it again, to be refused again.
            raise ServiceError(status, json.dumps(answer))
        raise ServiceError(status, json.dumps(answer))

    def wait(self, job):
        while job["status"] in ("queued", "running"):
            self.sleep(0.1)  # Flaw (poll-too-fast): ten polls a second, per job
            job = self.call("GET", "/v1/jobs/" + job["id"])[2]
        return job

    def call(self, method, path, body=None, headers=None):
        """One request; (status, headers, decoded JSON answer)."""
        hdrs = {"Authorization": "Bearer " + self.api_key, **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base_url + path, data, hdrs, method=method)
        try:
            with _opener.open(req, timeout=60) as resp:
                return resp.status, resp.headers, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            with err:
                raw = err.read()
            return err.code, err.headers, json.loads(raw) if raw.startswith(b"{") else {}


_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
