// One emulator for the whole run: globalSetup runs before the workers, provide() hands them
// its URL. It attaches to $MEDIAGEN_EMULATOR_URL (a CI service container), else starts one.
import type { TestProject } from 'vitest/node';
import { emulatorFromEnv } from '@mediagen/emulator-testing';

export default async function setup(project: TestProject) {
  const emu = await emulatorFromEnv({ seed: 42 });
  project.provide('mediagenUrl', emu.url);
  return async () => {
    await emu.close();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    mediagenUrl: string;
  }
}
