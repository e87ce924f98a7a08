// A whole client flow typed by the types openapi-typescript generates from the emulator's
// OpenAPI document (openapi.d.ts): list, narrow, quote, generate, poll, download.
//
//   npx openapi-typescript docs/openapi.json -o openapi.d.ts && npx tsc --strict ...
import type { components, paths } from './openapi.js';
import { startEmulator } from '@mediagen/emulator-testing';

type Schemas = components['schemas'];
type QuoteBody = paths['/v1/quotes']['post']['requestBody']['content']['application/json'];
type GenerateBody = paths['/v1/generate']['post']['requestBody']['content']['application/json'];
type ListAnswer = paths['/v1/models']['get']['responses'][200]['content']['application/json'];

const emu = await startEmulator({ seed: 42 });
try {
  const tenant = emu.newTenant('typed-flow');
  const call = async <T,>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> => {
    const resp = await fetch(tenant.baseUrl + path, {
      method,
      headers: { Authorization: `Bearer ${tenant.apiKey}`, 'Content-Type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!resp.ok) throw new Error(`${method} ${path}: ${resp.status} ${await resp.text()}`);
    return (await resp.json()) as T;
  };

  // A list item is a model (it has id and mode) or, with grouped=true, a product (it has modes).
  const describe = (item: Schemas['ModelSummary'] | Schemas['Product']): string =>
    'modes' in item ? `${item.product}: ${item.modes.map((m) => m.model).join(', ')}` : `${item.id} (${item.mode})`;
  const grouped = await call<ListAnswer>('GET', '/v1/models?grouped=true&limit=2');
  grouped.data.forEach((item) => console.log('product', describe(item)));
  const list = await call<ListAnswer>('GET', '/v1/models?category=text-to-image&limit=1');
  const first = list.data[0];
  if (first === undefined || 'modes' in first) throw new Error('no text-to-image model');
  console.log('model', describe(first));

  const detail = await call<Schemas['ModelDetail']>('GET', `/v1/models/${first.id}`);
  // input is an object of the model's own schema: any properties type-check.
  const input: QuoteBody['input'] = { ...(detail.examples?.[0] ?? { prompt: 'a red fox' }), output_format: 'png' };
  const quoteBody: QuoteBody = { model: first.id, input };
  const quote = await call<Schemas['Quote']>('POST', '/v1/quotes', quoteBody);
  const generateBody: GenerateBody = { model: first.id, input, quote_id: quote.quote_id };
  let job = await call<Schemas['Job']>('POST', '/v1/generate', generateBody, { 'Idempotency-Key': 'typed-flow-1' });

  for (let i = 0; i < 10 && (job.status === 'queued' || job.status === 'running'); i++) {
    await tenant.control.advance('1m'); // moves this tenant's clock alone
    job = await call<Schemas['Job']>('GET', `/v1/jobs/${job.id}`);
  }
  if (job.status !== 'succeeded') throw new Error(`job ended ${job.status}: ${job.error?.message}`);

  const output: Schemas['Output'] | undefined = job.outputs[0];
  if (output === undefined) throw new Error('a succeeded job without outputs');
  const file = await fetch(output.url); // output URLs need no key
  const bytes = new Uint8Array(await file.arrayBuffer());
  if (file.headers.get('content-type') !== output.content_type || bytes.length !== output.size_bytes) {
    throw new Error(`download: ${file.headers.get('content-type')} ${bytes.length} bytes, want ${output.content_type} ${output.size_bytes}`);
  }
  console.log(`typed flow: ${job.id} ${job.credits} credits, ${output.content_type} ${bytes.length} bytes`);
} finally {
  await emu.close();
}
