import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { globMatch } from '../summary.js';

const cjs = createRequire(import.meta.url)('../cjs/summary.js');

// A required case glob is judged here as the emulator judges it: * within a segment, ** across.
test('globMatch is the emulator glob', () => {
  for (const match of [globMatch, cjs.globMatch]) {
    assert.equal(match('job *', 'job failed provider_error'), true);
    assert.equal(match('GET /v1/*', 'GET /v1/jobs/{id} 404 job_not_found'), false);
    assert.equal(match('GET /v1/**', 'GET /v1/jobs/{id} 404 job_not_found'), true);
    assert.equal(match('POST /v1/jobs/*', 'POST /v1/jobs/{id}/cancel 409 job_not_cancelable'), false);
    assert.equal(match('new-key-*', 'new-key-on-retry'), true);
    assert.equal(match('a.c', 'abc'), false);
  }
});
