import type { Emulator } from '@mediagen/emulator-testing';

export default async function (): Promise<void> {
  await (globalThis as unknown as { mediagen: Emulator }).mediagen.close();
}
