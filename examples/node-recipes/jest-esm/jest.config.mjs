// Jest on native ES modules: run it with node --experimental-vm-modules.
export default {
  testEnvironment: 'node',
  transform: {},
  globalSetup: './global-setup.mjs',
  globalTeardown: './global-teardown.mjs',
};
