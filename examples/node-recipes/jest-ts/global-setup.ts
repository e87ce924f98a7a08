// One emulator for the whole run (or the one at $MEDIAGEN_EMULATOR_URL); the workers find it
// through MEDIAGEN_EMULATOR_URL.
import { emulatorFromEnv, type Emulator } from '@mediagen/emulator-testing';

declare global {
  var mediagen: Emulator;
}

export default async function (): Promise<void> {
  globalThis.mediagen = await emulatorFromEnv({ seed: 42 });
  process.env.MEDIAGEN_EMULATOR_URL = globalThis.mediagen.url;
}
