// One emulator for the whole run (or the one at $MEDIAGEN_EMULATOR_URL); the workers find it
// through MEDIAGEN_EMULATOR_URL.
import { emulatorFromEnv } from '@mediagen/emulator-testing';

export default async function () {
  globalThis.mediagen = await emulatorFromEnv({ seed: 42 });
  process.env.MEDIAGEN_EMULATOR_URL = globalThis.mediagen.url;
}
