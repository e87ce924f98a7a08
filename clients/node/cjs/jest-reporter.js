"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.default = void 0;
// Jest names reporters by module path: this module's default export is JestReporter.
//   reporters: ['default', ['@mediagen/emulator-testing/jest-reporter', { require: ['job *'], failOn: ['error'] }]]
var summary_js_1 = require("./summary.js");
Object.defineProperty(exports, "default", { enumerable: true, get: function () { return summary_js_1.JestReporter; } });
