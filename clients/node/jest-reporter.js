// Jest names reporters by module path: this module's default export is JestReporter.
//   reporters: ['default', ['@mediagen/emulator-testing/jest-reporter', { require: ['job *'], failOn: ['error'] }]]
export { JestReporter as default } from './summary.js';
