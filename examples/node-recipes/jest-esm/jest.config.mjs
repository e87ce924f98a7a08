// Jest on native ES modules: run it with node --experimental-vm-modules.
export default {
  testEnvironment: 'node',
  transform: {},
  globalSetup: './global-setup.mjs',
  globalTeardown: './global-teardown.mjs',
  // After the tests, the whole run's coverage and report; the run fails on a finding of severity
  // error, or if no job ever succeeded. The markdown goes to $GITHUB_STEP_SUMMARY when set.
  reporters: ['default', ['@mediagen/emulator-testing/jest-reporter', { failOn: ['error'], require: ['job succeeded'] }]],
};
