// Verification, expected and unexpected errors, coverage, the report and the end of a run,
// against the real emulator, each test in a tenant of its own.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { EmulatorError, JestReporter, VitestReporter, emulatorFromEnv, endOfRun, formatCoverage, formatReport, tenantFor } from '../index.js';
import { formatVerification } from '../control.js';
import { Client, imageModel } from './helpers.js';

let emu;

before(async () => {
  emu = await emulatorFromEnv();
});
after(async () => {
  assert.ok([0, null].includes(await emu.close()), 'the emulator shut down cleanly');
});

/** A tenant of the test's own with a client, and a 402 and a 404 in its journal. */
async function withErrors(t) {
  const tenant = await tenantFor(t, emu);
  const client = new Client(tenant);
  const model = await imageModel(tenant.baseUrl);
  const ok = await client.generate(model, { prompt: 'a red fox' }, 'k1');
  assert.equal(ok.status, 202);
  await tenant.control.setCredits('acct_all', 0);
  const poor = await client.generate(model, { prompt: 'a grey wolf' }, 'k2');
  assert.equal(poor.status, 402);
  const missing = await client.request('GET', '/v1/jobs/00000000-0000-0000-0000-000000000000');
  assert.equal(missing.status, 404);
  return { tenant, client, model, control: tenant.control, jobId: ok.json.id };
}

/** Collects what a reporter or endOfRun prints. */
function printer() {
  const out = [];
  return { print: (s) => out.push(s), get text() { return out.join('\n'); } };
}

describe('verify', { concurrency: true }, () => {
  test('counts matching requests, by method, path glob, status, code, headers, body and pointer', async (t) => {
    const { control, model } = await withErrors(t);
    assert.equal((await control.verify({ method: 'post', path: '/v1/generate' })).count, 2);
    assert.equal((await control.verify({ path: '/v1/jobs/*', status: 404, code: 'job_not_found' })).count, 1);
    assert.equal((await control.verify({ path: '/v1/*' })).count, 4); // * stops at a slash: quotes and generations
    assert.equal((await control.verify({ path: '/v1/**' })).count, 5); // and the job
    assert.equal((await control.verify({ headers: { 'idempotency-key': 'k2' } })).count, 1);
    assert.equal((await control.verify({ path: '/v1/generate', body: { model, input: { prompt: 'a red fox' } } })).count, 1);
    const byPointer = await control.verify({ pointers: { '/input/prompt': 'a grey wolf' } });
    assert.equal(byPointer.count, 2); // its quote and its generation
    assert.equal(byPointer.matches.length, 2);
    assert.ok(byPointer.matches[0] < byPointer.matches[1], 'oldest first');
    assert.equal((await control.verify({})).count, 5);
  });

  test('assertRequested passes with the count and fails with the near misses', async (t) => {
    const { control } = await withErrors(t);
    const v = await control.assertRequested({ method: 'POST', path: '/v1/generate', status: 402 }, { times: 1 });
    assert.equal(v.count, 1);
    await assert.rejects(control.assertRequested({ path: '/v1/generate' }, { times: 3 }), (err) => {
      assert.equal(err.name, 'AssertionError');
      assert.match(err.message, /wanted 3 requests matching \{"path":"\/v1\/generate"\}; found 2/);
      assert.match(err.message, /matching journal entries: #\d+, #\d+/);
      return true;
    });
    await assert.rejects(control.assertRequested({ method: 'POST', path: '/v1/generate', status: 409, headers: { 'Idempotency-Key': 'k1' } }), (err) => {
      assert.match(err.message, /wanted at least one request .*; found 0/);
      assert.match(err.message, /near misses, closest first:\n {2}#\d+ POST \/v1\/generate -> 202/);
      assert.match(err.message, /\/status: wanted 409, got 202/);
      return true;
    });
  });

  test('a bad pattern is a 422 with a pointer', async (t) => {
    const { control } = await tenantFor(t, emu);
    await assert.rejects(control.verify({ status: 700 }), (err) => err instanceof EmulatorError && err.status === 422 && err.problem.errors?.some((e) => e.pointer === '/status'));
    await assert.rejects(control.verify({ nonsense: 1 }), (err) => err.status === 422);
  });
});

describe('expected and unexpected errors', { concurrency: true }, () => {
  test('every error is unexpected until a pattern expects it', async (t) => {
    const { control } = await withErrors(t);
    const before = await control.unexpectedErrors();
    assert.deepEqual(before.map((u) => [u.entry.status, u.entry.code]), [[402, 'insufficient_credits'], [404, 'job_not_found']]);
    assert.ok(before[0].detail.length > 0);
    await assert.rejects(control.assertNoUnexpected(), (err) => {
      assert.equal(err.name, 'AssertionError');
      assert.match(err.message, /^2 unexpected errors in tenant /);
      assert.match(err.message, /#\d+ POST \/v1\/generate -> 402 insufficient_credits at \S+: \S/);
      assert.match(err.message, /Idempotency-Key: k2/);
      assert.match(err.message, /request body:\n\s+\{\n\s+"model"/);
      assert.match(err.message, /response body:\n[\s\S]*"code": "insufficient_credits"/);
      assert.match(err.message, /GET \/v1\/jobs\/0{8}-0{4}-0{4}-0{4}-0{12} -> 404 job_not_found/);
      return true;
    });
    assert.deepEqual(await control.expectError({ status: 402, code: 'insufficient_credits' }), [{ status: 402, code: 'insufficient_credits' }]);
    assert.deepEqual((await control.unexpectedErrors()).map((u) => u.entry.status), [404]);
    await control.expectError({ path: '/v1/jobs/*' });
    assert.equal((await control.expectedErrors()).length, 2);
    await control.assertNoUnexpected();
    await control.clearExpectedErrors();
    assert.deepEqual(await control.expectedErrors(), []);
    assert.equal((await control.unexpectedErrors()).length, 2);
    await control.expectError({ status: 402 });
    await control.reset();
    assert.deepEqual(await control.expectedErrors(), [], 'a reset forgets them');
  });

  test('tenantFor with failOnUnexpected fails the test at its end, then deletes the tenant', async (t) => {
    const ends = [];
    const fake = { name: 'fake test', after: (fn) => ends.push(fn) };
    const tenant = await tenantFor(fake, emu, { failOnUnexpected: true });
    t.after(() => tenant.delete());
    const resp = await new Client(tenant).request('GET', '/v1/models/no-such-model');
    assert.equal(resp.status, 404);
    assert.equal(ends.length, 1);
    await assert.rejects(ends[0](), /1 unexpected error in tenant .*\n.*GET \/v1\/models\/no-such-model -> 404 model_not_found/);
    assert.ok(!(await emu.control.tenants()).some((x) => x.name === tenant.name), 'deleted even so');

    // Vitest's context: task.name and onTestFinished; a clean tenant passes.
    const vitestEnds = [];
    const other = await tenantFor({ task: { name: 'a vitest test' }, onTestFinished: (fn) => vitestEnds.push(fn) }, emu, { failOnUnexpected: true });
    assert.match(other.name, /^a-vitest-test-/);
    await new Client(other).request('GET', '/v1/models');
    await vitestEnds[0]();
  });
});

describe('coverage and report', { concurrency: true }, () => {
  test('coverage counts the cases of a tenant and of the run, and names required ones missing', async (t) => {
    const { control } = await withErrors(t);
    const cov = await control.coverage({ require: ['POST /v1/generate 402 *', 'job failed *'] });
    assert.equal(cov.scope, 'tenant');
    assert.equal(cov.tenant, control.tenant);
    const count = (id) => cov.cases.find((c) => c.id === id)?.count;
    assert.equal(count('POST /v1/generate 402 insufficient_credits'), 1);
    assert.equal(count('GET /v1/jobs/{id} 404 job_not_found'), 1);
    assert.equal(count('job failed provider_error'), 0);
    assert.ok(cov.exercised >= 2 && cov.exercised < cov.total);
    assert.ok(cov.required_missing.includes('job failed provider_error'));
    assert.ok(!cov.required_missing.includes('POST /v1/generate 402 insufficient_credits'));
    const run = await control.coverage({ scope: 'run', require: 'POST /v1/generate 402 *' });
    assert.equal(run.scope, 'run');
    assert.ok(run.cases.find((c) => c.id === 'POST /v1/generate 402 insufficient_credits').count >= 1);
    assert.deepEqual(run.required_missing, []);
    const md = await control.coverageMarkdown({ scope: 'tenant' });
    assert.match(md, /\|/);
    assert.match(md, /insufficient_credits/);
    const table = formatCoverage(cov);
    // The short form every helper prints, as Go's emulatortest.ShortCoverage.
    assert.match(table, /^emulator coverage \(tenant \S+\): \d+ of \d+ cases exercised\n  errors   +\d+ of \d+\n/);
    assert.match(table, /\nrequired but never exercised \(\d+\):\n(  .+\n)*  job failed provider_error(\n|$)/);
    assert.ok(table.split('\n').length < 20, table); // a few lines, however many cases were never exercised
  });

  test('the report names a new key on a retry after a 5xx, for the tenant and for the run', async (t) => {
    const tenant = await tenantFor(t, emu);
    const { control } = tenant;
    const client = new Client(tenant);
    const model = await imageModel(tenant.baseUrl);
    await control.addFault({ match: { method: 'POST', path: '/v1/generate' }, status: 502, count: 1 });
    const input = { prompt: 'a kite' };
    const { quote_id: quoteId } = await client.quote(model, input);
    assert.equal((await client.generate(model, input, 'first', { quoteId })).status, 502);
    assert.equal((await client.generate(model, input, 'second', { quoteId })).status, 202);
    const report = await control.report();
    assert.equal(report.scope, 'tenant');
    const finding = report.findings.find((f) => f.rule === 'new-key-on-retry');
    assert.ok(finding, JSON.stringify(report.findings));
    assert.equal(finding.severity, 'error');
    assert.equal(finding.entries.length, 2);
    assert.ok(report.rules.some((r) => r.id === 'outputs-never-downloaded'));
    assert.match(formatReport(report), /error\s+new-key-on-retry\s+1/);
    assert.match(await control.reportMarkdown({ scope: 'tenant' }), /new-key-on-retry/);
    const run = await control.report({ scope: 'run' });
    assert.equal(run.scope, 'run');
    assert.ok(run.counts['new-key-on-retry'] >= 1);
  });

  test('endOfRun prints, writes markdown, and fails on required cases and chosen rules', async (t) => {
    const tenant = await tenantFor(t, emu);
    await tenant.control.addFault({ match: { method: 'POST', path: '/v1/generate' }, status: 503, count: 1 });
    const client = new Client(tenant);
    const model = await imageModel(tenant.baseUrl);
    const { quote_id: quoteId } = await client.quote(model, { prompt: 'x' });
    await client.generate(model, { prompt: 'x' }, 'a', { quoteId });
    await client.generate(model, { prompt: 'x' }, 'b', { quoteId }); // at once, and with a new key
    const dir = mkdtempSync(join(tmpdir(), 'mediagen-summary-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const md = join(dir, 'summary.md');

    const out = printer();
    const passed = await endOfRun({ emulator: emu, markdown: md, print: out.print, require: ['POST /v1/generate 503 *'] });
    assert.deepEqual(passed.failures, []);
    assert.match(out.text, /emulator coverage \(the whole run\): \d+ of \d+ cases exercised\n  errors +\d+ of \d+\n/);
    assert.match(out.text, /report \(run\): \d+ requests examined/);
    const written = readFileSync(md, 'utf8');
    assert.match(written, /new-key-on-retry/);

    const failing = await endOfRun({ url: emu.url, markdown: false, print: out.print, require: ['job canceled', 'no such case *'], failOn: ['warning', 'new-key-*'] });
    assert.ok(failing.failures.length >= 4, failing.failures.join('\n'));
    assert.equal(failing.failures[0], 'required cases never exercised: job canceled');
    assert.equal(failing.failures[1], 'required "no such case *" matches no case');
    assert.ok(failing.failures.some((f) => f.startsWith('new-key-on-retry: ')));
    assert.ok(failing.failures.some((f) => f.startsWith('retry-after-ignored: ')));
    assert.equal(readFileSync(md, 'utf8'), written, 'markdown: false writes nothing');

    const jest = new JestReporter({}, { url: emu.url, markdown: false, print: out.print, failOn: ['new-key-on-retry'] });
    await jest.onRunComplete();
    assert.match(jest.getLastError()?.message ?? '', /new-key-on-retry/);
    const quiet = new JestReporter({}, { url: emu.url, markdown: false, print: out.print });
    await quiet.onRunComplete();
    assert.equal(quiet.getLastError(), undefined);

    const vitest = new VitestReporter({ markdown: false, print: out.print, failOn: ['error'] });
    vitest.onInit({ projects: [{ getProvidedContext: () => ({ mediagenUrl: emu.url }) }] });
    const saved = process.exitCode;
    try {
      await vitest.onTestRunEnd();
      assert.equal(process.exitCode, 1);
    } finally {
      process.exitCode = saved;
    }
  });
});

test('endOfRun without an emulator fails only when it has a gate', async () => {
  const saved = process.env.MEDIAGEN_EMULATOR_URL;
  delete process.env.MEDIAGEN_EMULATOR_URL;
  try {
    const out = printer();
    assert.deepEqual((await endOfRun({ print: out.print, markdown: false })).failures, []);
    assert.match(out.text, /no emulator/);
    assert.equal((await endOfRun({ print: out.print, markdown: false, failOn: ['error'] })).failures.length, 1);
  } finally {
    if (saved !== undefined) process.env.MEDIAGEN_EMULATOR_URL = saved;
  }
});

test('formatVerification shows each missed field, absent ones as nothing', () => {
  const entry = { seq: 7, method: 'POST', path: '/v1/generate', query: '', status: 200, time: '2026-01-01T00:00:00Z' };
  const text = formatVerification({ status: 402 }, {
    count: 0,
    matches: [],
    near_misses: [{ entry, missed: [{ field: '/status', want: 402, got: 200 }, { field: '/headers/Idempotency-Key', want: 'k1', got: null }] }],
  });
  assert.equal(
    text,
    'wanted at least one request matching {"status":402}; found 0\n' +
      'near misses, closest first:\n' +
      '  #7 POST /v1/generate -> 200 at 2026-01-01T00:00:00Z\n' +
      '      /status: wanted 402, got 200\n' +
      '      /headers/Idempotency-Key: wanted "k1", got nothing',
  );
});
