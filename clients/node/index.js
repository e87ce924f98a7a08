// Test helpers for mediagen-emulator: start or attach to the emulator, drive its control API,
// and give each test its own tenant. Types: index.d.ts.

export {
  ADMIN_TOKEN_HEADER,
  Control,
  EmulatorError,
  EmulatorTimeoutError,
  SNAPSHOT_DIR_ENV,
  TENANT_HEADER,
  durationText,
  snapshotDir,
} from './control.js';
export {
  ADMIN_TOKEN_ENV,
  BIN_ENV,
  DEFAULT_KEY,
  Emulator,
  EmulatorStartError,
  KEY_ENV,
  TENANT_ENV,
  URL_ENV,
  attachEmulator,
  emulatorFromEnv,
  findBinary,
  startEmulator,
  tenantFor,
  tenantName,
} from './emulator.js';
export { ExploreFailure, Explorer, PLAN_ENV, explore, readPlan } from './explore.js';
export { JestReporter, VitestReporter, endOfRun, formatCoverage, formatReport } from './summary.js';
export {
  WEBHOOK_TOLERANCE_MS,
  WebhookReceiver,
  WebhookVerificationError,
  newSecret,
  verifyWebhook,
  webhookReceiver,
} from './webhooks.js';
