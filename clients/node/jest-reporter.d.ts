// Jest names reporters by module path: this module's default export is JestReporter.
export { JestReporter as default } from './index.js';
