// The clients' own tests against the plain stub: both clients pass every one. A stub that only
// answers cannot tell a careful client from a sloppy one; report.test.mts asks the emulator.
//
//   node --test (after tsc; see examples/typescript/README.md)

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { CarefulClient } from './careful-client.mjs';
import type { ClientOptions, Render } from './http.mjs';
import { SloppyClient } from './sloppy-client.mjs';
import { startStub, type Stub } from './stub.mjs';

let stub: Stub;
before(async () => {
  stub = await startStub();
});
after(() => stub.close());

const noWait = async () => {};

for (const [name, make] of [
  ['sloppy', (o: ClientOptions) => new SloppyClient(o)],
  ['careful', (o: ClientOptions) => new CarefulClient(o)],
] as const) {
  describe(`${name} client against the stub`, () => {
    const client = () => make({ baseUrl: stub.baseUrl, apiKey: 'k', sleep: noWait });

    test('renders a picture', async () => {
      const { job }: Render = await client().render('m', { prompt: 'a red fox' });
      assert.equal(job.status, 'succeeded');
      assert.equal(job.outputs.length, 1);
    });

    test('survives a 503 on generate', async () => {
      stub.failGenerations = 1;
      const { job } = await client().render('m', { prompt: 'a lighthouse' });
      assert.equal(job.status, 'succeeded');
      assert.equal(stub.failGenerations, 0);
    });

    test('renders the same prompt twice', async () => {
      const c = client();
      for (let i = 0; i < 2; i++) assert.equal((await c.render('m', { prompt: 'a harbour' })).job.status, 'succeeded');
    });
  });
}
