"""A plain stub of the media generation service, of the kind a client's own tests often use:
quotes, generations and jobs that succeed on the second poll, and files to download. It checks
nothing a real service checks (keys, quotes used or expired, Retry-After, polling pace), which
is why hasty_client.py passes its tests against it.

    with StubService(fail_generate=1) as stub:      # the first POST /v1/generate answers 503
        client = HastyClient(stub.url, "any-key")
"""

import datetime
import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24  # enough of a PNG for a client that checks the signature


class StubService:
    def __init__(self, fail_generate=0):
        self.fail_generate = fail_generate
        self.requests = []  # (method, path, headers) of every request, for the tests
        self.jobs = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                stub._handle(self)

            def do_POST(self):
                stub._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self._server.server_address[1]

    def __enter__(self):
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def _handle(self, h):
        length = int(h.headers.get("Content-Length") or 0)
        body = json.loads(h.rfile.read(length)) if length else None
        with self._lock:
            self.requests.append((h.command, h.path, dict(h.headers)))
            status, answer = self._answer(h.command, h.path, body)
        if isinstance(answer, bytes):
            h.send_response(status)
            h.send_header("Content-Type", "image/png")
            h.send_header("Content-Length", str(len(answer)))
            h.end_headers()
            h.wfile.write(answer)
            return
        raw = json.dumps(answer).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(raw)))
        h.end_headers()
        h.wfile.write(raw)

    def _answer(self, method, path, body):
        if (method, path) == ("POST", "/v1/quotes"):
            expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=10)
            return 200, {"quote_id": "q%d" % next(self._ids), "model": body["model"], "credits": 4,
                         "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}
        if (method, path) == ("POST", "/v1/generate"):
            if self.fail_generate > 0:
                self.fail_generate -= 1
                return 503, {"status": 503, "code": "service_unavailable", "detail": "try again"}
            job = {"id": "j%d" % next(self._ids), "model": body["model"], "status": "queued", "outputs": [], "polls": 0}
            self.jobs[job["id"]] = job
            return 202, job
        m = re.fullmatch(r"/v1/jobs/([^/]+)", path)
        if method == "GET" and m and m.group(1) in self.jobs:
            job = self.jobs[m.group(1)]
            job["polls"] += 1
            if job["polls"] >= 2:
                job["status"] = "succeeded"
                job["outputs"] = [{"type": "image", "url": "%s/files/%s/0.png" % (self.url, job["id"]), "content_type": "image/png"}]
            return 200, job
        if method == "GET" and path.startswith("/files/"):
            return 200, PNG
        return 404, {"status": 404, "code": "not_found"}
