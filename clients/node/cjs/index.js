"use strict";
// Test helpers for mediagen-emulator: start or attach to the emulator, drive its control API,
// and give each test its own tenant. Types: index.d.ts.
Object.defineProperty(exports, "__esModule", { value: true });
exports.tenantName = exports.tenantFor = exports.startEmulator = exports.findBinary = exports.emulatorFromEnv = exports.attachEmulator = exports.URL_ENV = exports.EmulatorStartError = exports.Emulator = exports.DEFAULT_KEY = exports.BIN_ENV = exports.ADMIN_TOKEN_ENV = exports.durationText = exports.TENANT_HEADER = exports.EmulatorTimeoutError = exports.EmulatorError = exports.Control = exports.ADMIN_TOKEN_HEADER = void 0;
var control_js_1 = require("./control.js");
Object.defineProperty(exports, "ADMIN_TOKEN_HEADER", { enumerable: true, get: function () { return control_js_1.ADMIN_TOKEN_HEADER; } });
Object.defineProperty(exports, "Control", { enumerable: true, get: function () { return control_js_1.Control; } });
Object.defineProperty(exports, "EmulatorError", { enumerable: true, get: function () { return control_js_1.EmulatorError; } });
Object.defineProperty(exports, "EmulatorTimeoutError", { enumerable: true, get: function () { return control_js_1.EmulatorTimeoutError; } });
Object.defineProperty(exports, "TENANT_HEADER", { enumerable: true, get: function () { return control_js_1.TENANT_HEADER; } });
Object.defineProperty(exports, "durationText", { enumerable: true, get: function () { return control_js_1.durationText; } });
var emulator_js_1 = require("./emulator.js");
Object.defineProperty(exports, "ADMIN_TOKEN_ENV", { enumerable: true, get: function () { return emulator_js_1.ADMIN_TOKEN_ENV; } });
Object.defineProperty(exports, "BIN_ENV", { enumerable: true, get: function () { return emulator_js_1.BIN_ENV; } });
Object.defineProperty(exports, "DEFAULT_KEY", { enumerable: true, get: function () { return emulator_js_1.DEFAULT_KEY; } });
Object.defineProperty(exports, "Emulator", { enumerable: true, get: function () { return emulator_js_1.Emulator; } });
Object.defineProperty(exports, "EmulatorStartError", { enumerable: true, get: function () { return emulator_js_1.EmulatorStartError; } });
Object.defineProperty(exports, "URL_ENV", { enumerable: true, get: function () { return emulator_js_1.URL_ENV; } });
Object.defineProperty(exports, "attachEmulator", { enumerable: true, get: function () { return emulator_js_1.attachEmulator; } });
Object.defineProperty(exports, "emulatorFromEnv", { enumerable: true, get: function () { return emulator_js_1.emulatorFromEnv; } });
Object.defineProperty(exports, "findBinary", { enumerable: true, get: function () { return emulator_js_1.findBinary; } });
Object.defineProperty(exports, "startEmulator", { enumerable: true, get: function () { return emulator_js_1.startEmulator; } });
Object.defineProperty(exports, "tenantFor", { enumerable: true, get: function () { return emulator_js_1.tenantFor; } });
Object.defineProperty(exports, "tenantName", { enumerable: true, get: function () { return emulator_js_1.tenantName; } });
