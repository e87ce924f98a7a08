"""A client of the media generation service that behaves: the well-behaved twin of
hasty_client.py. What it does differently is marked "Careful:".

    client = CarefulClient("https://api.example", "mg_live_...")
    images = client.render("fal-ai/flux/dev", {"prompt": "a red fox"})   # the outputs' bytes

`sleep` is how it waits (time.sleep by default); a test against the emulator's manual clock
passes `tenant.control.advance`, so that waiting moves the emulator's clock instead of the test's.

What real services do beyond the contract it handles too: an input the content policy refused
(422 content_policy_violation) is remembered and never sent again; a model whose answers say it
is deprecated (Deprecation, and Link rel="successor-version") is left for its successor at once;
a partial result (some outputs filtered out) is returned, its count in `filtered`; a signed
output link found expired (403) is never fetched again: a read of the job gives a fresh one; a
job queued behind the account's concurrency limit is waited for however long its line (its
`queue_position` is kept in `positions`, for a progress display), never given up on as stuck;
and a 429 concurrency_limited, like any 429, is sent again with the same key once Retry-After
has passed.

An edit (image-to-image, inpainting) takes its image as a URL the service fetches: the careful
client uploads the file (POST /v1/uploads) and sends the upload's url, never a URL of its own
machine, which the hosted service cannot reach; the same bytes reuse their upload, and an upload
that expired while the job waited in the queue (input_expired) is uploaded again, once:

    images = client.edit("fal-ai/flux/dev/image-to-image", open("cat.png", "rb").read(), {"prompt": "in snow"})
"""

import hashlib

import http.client
import json
import time
import urllib.error
import urllib.request
import uuid

TERMINAL = {"succeeded", "failed", "canceled", "expired"}
# Careful: only answers that may succeed unchanged later are retried; a 4xx other than 429 would
# fail again the same way.
RETRYABLE = {429, 500, 502, 503, 504}
# How many times one output's link is replaced by a fresh one from a read of the job.
LINK_REFRESHES = 3


class ServiceError(Exception):
    """An answer the client does not retry, or the last of its retries."""

    def __init__(self, status, body):
        self.status, self.body = status, body
        super().__init__("%s: %s" % (status, body[:300]))

    def problem(self):
        """The problem body the service answered with, or {}."""
        try:
            problem = json.loads(self.body)
        except ValueError:
            return {}
        return problem if isinstance(problem, dict) else {}


def successor_of(headers):
    """The model a deprecated model's answer names as its successor-version, or None: Deprecation
    (RFC 9745) says the model is deprecated, Link names the model to move to."""
    if not headers.get("Deprecation"):
        return None
    for value in headers.get_all("Link") or []:
        for link in value.split(","):
            target, _, params = link.partition(";")
            if 'rel="successor-version"' in params:
                return target.strip().strip("<>").removeprefix("/v1/models/")
    return None


class CarefulClient:
    def __init__(self, base_url, api_key, sleep=time.sleep, attempts=5, poll_floor=1.0, poll_ceiling=10.0):
        self.base_url, self.api_key, self.sleep = base_url.rstrip("/"), api_key, sleep
        self.attempts, self.poll_floor, self.poll_ceiling = attempts, poll_floor, poll_ceiling
        self.refused = {}  # (model, input) -> the refusal, never sent again
        self.successor = {}  # a deprecated model -> the model to use instead
        self.filtered = 0  # outputs the last render's job filtered out
        self.model = None  # the model that made the last render
        self.positions = []  # the queue_position of the last render's job, each time it moved
        self.outputs = []  # the last render's outputs as its job described them (width, height, ...)
        self.uploads = {}  # sha256 of a file -> its upload, reused while it lasts

    def render(self, model, data):
        """Quotes, generates, waits for the job and downloads every output; returns their bytes."""
        model = self.successor.get(model, model)
        asked = (model, json.dumps(data, sort_keys=True))
        if asked in self.refused:
            raise self.refused[asked]  # Careful: the same input would be refused again
        quote, hdrs = self.call("POST", "/v1/quotes", {"model": model, "input": data}, with_headers=True)  # Careful: a quote per generation
        successor = successor_of(hdrs)
        if successor and successor != model:
            # Careful: the answer announced the model's deprecation; move before generating.
            self.successor[model] = model = successor
            quote = self.call("POST", "/v1/quotes", {"model": model, "input": data})
        try:
            job = self.generate(model, data, quote["quote_id"])
        except ServiceError as err:
            code = err.problem().get("code")
            if code == "content_policy_violation":
                self.refused[asked] = err
            elif code == "model_retired" and err.problem().get("replacement"):
                self.successor[model] = err.problem()["replacement"]
            raise
        job = self.wait(job)
        if job["status"] != "succeeded":
            raise ServiceError(job["status"], json.dumps(job.get("error")))
        # Careful: a partial result is what it is; it was charged only for what it returned.
        self.filtered, self.model, self.outputs = job.get("filtered_outputs", 0), model, job["outputs"]
        files = []
        for index in range(len(job["outputs"])):  # Careful: outputs expire; fetch them now
            data, job = self.fetch_output(job, index)
            files.append(data)
        return files

    def upload(self, data, content_type):
        """The upload of a file's bytes (its url goes in any media input), made once per file."""
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self.uploads:  # Careful: the same bytes are uploaded once, and their url reused
            self.uploads[digest] = self.call("POST", "/v1/uploads", data, {"Content-Type": content_type})
        return self.uploads[digest]

    def edit(self, model, image, data, content_type="image/png", member="image_url"):
        """Renders a model that edits an image (its bytes): uploaded, its url sent as member; the
        outputs' bytes. The outputs have the image's size, unless data names another."""
        for attempt in range(2):
            up = self.upload(image, content_type)
            try:
                # Careful: the service fetches the input itself; only a URL it can reach will do.
                return self.render(model, {**data, member: up["url"]})
            except ServiceError as err:
                if attempt or "input_expired" not in err.body:
                    raise
                # Careful: the upload expired while the job waited in the queue: a new upload.
                self.uploads.pop(hashlib.sha256(image).hexdigest(), None)
        raise AssertionError("unreachable")

    def generate(self, model, data, quote_id):
        # Careful: one key per generation, sent again on every retry, so that a retry of a request
        # that did reach the service returns the same job instead of making (and charging) another.
        key = str(uuid.uuid4())
        return self.call("POST", "/v1/generate", {"model": model, "input": data, "quote_id": quote_id},
                         {"Idempotency-Key": key})

    def wait(self, job):
        interval = self.poll_floor
        self.positions = []
        while job["status"] not in TERMINAL:  # Careful: never polls a job seen terminal
            # Careful: a job waiting for a concurrency slot is not stuck; its place only moves up.
            # No deadline is put on a queued job: the service expires it if it never starts.
            position = job.get("queue_position")
            if position and (not self.positions or self.positions[-1] != position):
                self.positions.append(position)
            self.sleep(interval)  # Careful: at least poll_floor between polls, backing off
            job = self.call("GET", "/v1/jobs/" + job["id"])
            interval = min(interval * 1.5, self.poll_ceiling)
        return job

    def fetch_output(self, job, index):
        """The bytes of the job's output at index, and the job as last read."""
        for refresh in range(LINK_REFRESHES + 1):
            try:
                return self.download(job["outputs"][index]["url"]), job
            except ServiceError as err:
                if err.status != 403 or refresh == LINK_REFRESHES:
                    raise
            # Careful: a signed link may expire before its file does, and would be refused again;
            # a read of the job gives a fresh link, which the later outputs use too.
            job = self.call("GET", "/v1/jobs/" + job["id"])
            if index >= len(job.get("outputs") or []):
                raise ServiceError(403, "the job no longer lists output %d" % index)

    def download(self, url):
        return self.call("GET", url, raw=True)

    def call(self, method, path, body=None, headers=None, raw=False, with_headers=False):
        """One request, retried on 429, 5xx and lost connections; the JSON answer (or bytes), with
        the answer's headers when asked."""
        backoff = 1.0
        for attempt in range(1, self.attempts + 1):
            try:
                status, hdrs, answer = self._send(method, path, body, headers)
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError) as err:
                status, hdrs, answer = None, {}, str(err).encode()
            if status is not None and status < 400:
                answer = answer if raw else json.loads(answer)
                return (answer, hdrs) if with_headers else answer
            if (status is not None and status not in RETRYABLE) or attempt == self.attempts:
                raise ServiceError(status, answer.decode("utf-8", "replace"))
            # Careful: Retry-After, when the service gives one, is the least time to wait.
            self.sleep(max(float(hdrs.get("Retry-After") or 0), backoff))
            backoff = min(backoff * 2, 30.0)

    def _send(self, method, path, body, headers):
        url = path if path.startswith("http") else self.base_url + path
        hdrs = dict(headers or {})
        if not path.startswith("http"):  # Careful: the key goes to the API, never to a file URL
            hdrs["Authorization"] = "Bearer " + self.api_key
        data = None
        if isinstance(body, bytes):  # a file, its Content-Type in headers
            data = body
        elif body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data, hdrs, method=method)
        try:
            with _opener.open(req, timeout=60) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as err:
            with err:
                return err.code, err.headers, err.read()


# Straight to the service: a proxy from HTTP_PROXY would see (and usually refuse) loopback addresses.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
