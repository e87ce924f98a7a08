#!/usr/bin/env python3
"""careful_client.py with one bug, the one that double-charges in production: after an ambiguous
failure of a generation (a 5xx, a dropped connection, a broken answer) it retries with a FRESH
Idempotency-Key. If the first attempt did reach the service, the retry makes a second job, and a
second charge.

    mediagen-emulator explore --runs 100 --seed 7 -- python3 examples/explore/buggy_client.py

finds it, shrinks the adversity to the plan that shows it, and names the mistake
(new-key-on-retry). Configured, and exiting, as careful_client.py.
"""

import sys
import uuid

import careful_client


class BuggyClient(careful_client.Client):
    def retry_headers(self, headers):
        # BUG: a new key on every retry. The careful client sends the same one again.
        if headers and "Idempotency-Key" in headers:
            return dict(headers, **{"Idempotency-Key": str(uuid.uuid4())})
        return headers


if __name__ == "__main__":
    sys.exit(careful_client.main(BuggyClient))
