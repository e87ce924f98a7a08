import { defineConfig } from 'vitest/config';
import { VitestReporter } from '@mediagen/emulator-testing';

export default defineConfig({
  test: {
    globalSetup: ['./global-setup.ts'],
    // After the tests, the whole run's coverage and report (every worker's tenants); the run
    // fails on a finding of severity error, or if no job ever succeeded. The markdown goes to
    // $GITHUB_STEP_SUMMARY when that is set.
    reporters: ['default', new VitestReporter({ failOn: ['error'], require: ['job succeeded'] })],
  },
});
