// The chat platform's app SDK: everything an app's server needs, on Node.js built-ins only.
export * from './types.js';
export { MemoryReplayStore, REPLAY_TTL_SECONDS, headerOf, replayKeyOf, verifyWebhook, type ReplayStore, type VerifyFailure } from './verify.js';
export { sealingKeyFrom, unseal } from './sealing.js';
export { BotClient, PaymentsClient, ServiceApiError, answerLater, type MoneyMovement, type Payment } from './clients.js';
export { webhookHandler } from './handler.js';
export { verifySessionToken } from './session.js';
