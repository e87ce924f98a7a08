"""A client test suite against mediagen-emulator, with the Python standard library only.

It starts the built emulator as a subprocess on a free port with a manual clock and a fixed
seed, reads the address from the first line the emulator prints, and drives the whole flow of a
Media Generation Service client: catalog, model schema, quote, generation, download, a forced
failure and an expired quote. Time moves only when a test posts to /_emulator/clock, so nothing
here sleeps.

    MEDIAGEN_BIN=/path/to/mediagen-emulator python3 -m unittest discover -s examples/python -v

Without MEDIAGEN_BIN it uses ./mediagen-emulator at the repository root, or builds it with Go.
"""

import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import unittest
import urllib.error
import urllib.parse
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]
KEY = "mg_test_all"  # the embedded catalog's key with models:read and generate
ACCOUNT = "acct_all"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def emulator_binary(workdir):
    """The emulator to run: $MEDIAGEN_BIN, ./mediagen-emulator, or a fresh go build."""
    if os.environ.get("MEDIAGEN_BIN"):
        return os.environ["MEDIAGEN_BIN"]
    built = REPO / "mediagen-emulator"
    if built.is_file():
        return str(built)
    out = os.path.join(workdir, "mediagen-emulator")
    subprocess.run(["go", "build", "-o", out, "."], cwd=REPO, check=True)
    return out


class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


class EmulatorTestCase(unittest.TestCase):
    """Starts one emulator for the class and resets it before every test."""

    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="mediagen-py-")
        cls.log = open(os.path.join(cls.workdir, "emulator.log"), "wb")
        # The emulator reads MEDIAGEN_* variables as flag defaults; leave them out so the
        # suite runs the same everywhere.
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEDIAGEN_")}
        cls.proc = subprocess.Popen(
            [emulator_binary(cls.workdir), "--addr", "127.0.0.1:0", "--clock", "manual", "--seed", "42"],
            stdout=subprocess.PIPE, stderr=cls.log, env=env)
        # The first line is "listening on http://HOST:PORT" once the port is bound; a watchdog
        # kills an emulator that never prints it, so readline cannot hang the suite.
        watchdog = threading.Timer(15, cls.proc.kill)
        watchdog.start()
        line = cls.proc.stdout.readline().decode().strip()
        watchdog.cancel()
        if not line.startswith("listening on http://"):
            cls.proc.kill()
            cls.proc.wait()
            raise RuntimeError("emulator did not start: %r\n%s" % (line, pathlib.Path(cls.log.name).read_text()))
        cls.base = line[len("listening on "):]

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()  # SIGTERM: a graceful shutdown
        try:
            cls.exit_code = cls.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            cls.proc.kill()
            cls.exit_code = cls.proc.wait()
        cls.proc.stdout.close()
        cls.log.close()
        shutil.rmtree(cls.workdir, ignore_errors=True)
        if cls.exit_code != 0:
            raise AssertionError("emulator exited with %d after SIGTERM" % cls.exit_code)

    def setUp(self):
        self.control("POST", "/_emulator/reset")

    # --- HTTP ---------------------------------------------------------------------------------

    def request(self, method, url, body=None, headers=None, key=KEY):
        if not url.startswith("http"):
            url = self.base + url
        data = None
        hdrs = dict(headers or {})
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        if key:
            hdrs["Authorization"] = "Bearer " + key
        req = urllib.request.Request(url, data=data, headers=hdrs, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return Response(resp.status, resp.headers, resp.read())
        except urllib.error.HTTPError as err:
            with err:
                return Response(err.code, err.headers, err.read())

    def api(self, method, path, body=None, headers=None, want=None):
        resp = self.request(method, path, body, headers)
        if want is not None:
            self.assertEqual(resp.status, want, resp.body.decode(errors="replace"))
        return resp

    def control(self, method, path, body=None):
        resp = self.request(method, path, body, key=None)
        self.assertLess(resp.status, 300, resp.body.decode(errors="replace"))
        return resp.json() if resp.body else None

    def advance(self, duration):
        """Moves the emulator's clock; returns once every job due by then has moved on."""
        return self.control("POST", "/_emulator/clock", {"advance": duration})

    def balance(self, account=ACCOUNT):
        return next(b for b in self.control("GET", "/_emulator/accounts")["data"] if b["account"] == account)

    # --- the client flow ----------------------------------------------------------------------

    def first_image_model(self):
        listing = self.api("GET", "/v1/models?category=text-to-image&limit=5", want=200).json()
        self.assertGreater(listing["total"], 0)
        return listing["data"][0]

    def model_schema(self, model_id):
        # The id is used as-is in the path, slashes included.
        detail = self.api("GET", "/v1/models/" + model_id, want=200).json()
        doc = detail["openapi"]
        self.assertTrue(doc["openapi"].startswith("3.1"), doc["openapi"])
        bodies = [op["requestBody"] for item in doc["paths"].values() for op in item.values() if "requestBody" in op]
        self.assertEqual(len(bodies), 1, "the OpenAPI document describes exactly one request body")
        return bodies[0]["content"]["application/json"]["schema"]

    def input_from_schema(self, schema):
        """An input built from the schema's examples, asking for PNG when the model offers it."""
        if schema.get("examples"):
            data = dict(schema["examples"][0])
        else:
            data = {name: schema["properties"][name]["examples"][0] for name in schema.get("required", [])}
        fmt = schema.get("properties", {}).get("output_format", {})
        if "png" in fmt.get("enum", []):
            data["output_format"] = "png"
        return data

    def quote(self, model, data):
        q = self.api("POST", "/v1/quotes", {"model": model, "input": data}, want=200).json()
        self.assertEqual(set(q), {"quote_id", "model", "credits", "expires_at"})
        return q

    def generate(self, model, data, quote_id, key, query="", headers=None):
        hdrs = {"Idempotency-Key": key}
        hdrs.update(headers or {})
        return self.api("POST", "/v1/generate" + query, {"model": model, "input": data, "quote_id": quote_id}, hdrs)


class ClientFlowTest(EmulatorTestCase):

    def test_catalog_lists_models_with_an_openapi_schema(self):
        model = self.first_image_model()
        self.assertEqual(model["output_type"], "image")
        self.assertEqual(model["status"], "ready")
        schema = self.model_schema(model["id"])
        self.assertEqual(schema["type"], "object")
        self.assertIn("prompt", schema["required"])

    def test_quote_generate_and_download(self):
        model = self.first_image_model()["id"]
        data = self.input_from_schema(self.model_schema(model))
        quote = self.quote(model, data)
        self.assertGreater(quote["credits"], 0)

        job = self.generate(model, data, quote["quote_id"], "order-1")
        self.assertEqual(job.status, 202)
        self.assertEqual(job.json()["status"], "queued")
        self.assertEqual(job.json()["credit_status"], "held")
        location = job.headers["Location"]

        # The manual clock stands still: move it past the job's run time, then look once.
        self.advance("1m")
        done = self.api("GET", location, want=200).json()
        self.assertEqual(done["status"], "succeeded")
        self.assertEqual(done["credit_status"], "charged")
        self.assertEqual(len(done["outputs"]), data.get("num_images", 1))

        output = done["outputs"][0]
        resp = self.request("GET", output["url"], key=None)  # outputs need no key
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.headers["Content-Type"], "image/png")
        self.assertEqual(resp.body[:8], PNG_SIGNATURE)
        self.assertEqual(len(resp.body), output["size_bytes"])
        width = int.from_bytes(resp.body[16:20], "big")  # from the IHDR chunk
        height = int.from_bytes(resp.body[20:24], "big")
        self.assertEqual((width, height), (output["width"], output["height"]))
        self.assertEqual(self.balance()["charged"], quote["credits"])

    def test_wait_true_answers_with_the_finished_job(self):
        model = self.first_image_model()["id"]
        data = self.input_from_schema(self.model_schema(model))
        quote = self.quote(model, data)
        first = self.generate(model, data, quote["quote_id"], "order-2")
        self.assertEqual(first.status, 202)

        # Retry the same generation with wait=true (the Idempotency-Key makes it the same job)
        # while the clock moves. Whether the clock moves before or during the wait, the answer
        # is the finished job with 200; the wait never depends on a sleep.
        result = {}
        waiter = threading.Thread(target=lambda: result.update(
            resp=self.generate(model, data, quote["quote_id"], "order-2", query="?wait=true")))
        waiter.start()
        self.advance("1m")
        waiter.join(timeout=30)
        resp = result["resp"]
        self.assertEqual(resp.status, 200, resp.body)
        self.assertEqual(resp.headers["Idempotent-Replayed"], "true")
        self.assertEqual(resp.json()["id"], first.json()["id"])
        self.assertEqual(resp.json()["status"], "succeeded")

    def test_forced_failure_refunds_the_credits(self):
        model = self.first_image_model()["id"]
        before = self.balance()
        cases = [
            ("header", {"prompt": "a red fox"}, {"X-Emulator-Outcome": "fail"}),
            ("token", {"prompt": "a red fox [emulator:fail]"}, {}),
        ]
        for name, data, headers in cases:
            with self.subTest(name):
                quote = self.quote(model, data)
                job = self.generate(model, data, quote["quote_id"], "fail-" + name, headers=headers)
                self.assertEqual(job.status, 202)
                self.assertEqual(self.balance()["held"], quote["credits"])
                self.advance("1m")
                failed = self.api("GET", "/v1/jobs/" + job.json()["id"], want=200).json()
                self.assertEqual(failed["status"], "failed")
                self.assertEqual(failed["error"]["code"], "generation_failed")
                self.assertEqual(failed["credit_status"], "refunded")
                self.assertEqual(failed["outputs"], [])
                self.assertEqual(self.balance(), before)

    def test_quote_expires_on_the_manual_clock(self):
        model = self.first_image_model()["id"]
        data = {"prompt": "a red fox"}
        quote = self.quote(model, data)
        self.advance("10m1s")  # quotes live 10 minutes
        resp = self.generate(model, data, quote["quote_id"], "late")
        self.assertEqual(resp.status, 422)
        self.assertEqual(resp.headers["Content-Type"], "application/problem+json")
        problem = resp.json()
        self.assertEqual(problem["code"], "quote_expired")
        self.assertIn(quote["quote_id"], problem["detail"])
        self.assertEqual(self.balance()["held"], 0)


if __name__ == "__main__":
    unittest.main()
