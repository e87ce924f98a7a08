// The usual ts-jest setup: TypeScript compiled to CommonJS, which loads the helper's
// CommonJS entry.
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  globalSetup: './global-setup.ts',
  globalTeardown: './global-teardown.ts',
  reporters: ['default', ['@mediagen/emulator-testing/jest-reporter', { failOn: ['error'] }]], // the run's coverage and report
};
