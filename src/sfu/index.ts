// The sfu area: the SFU node (mediasoup) that the sfu role runs and the client api nodes reach it with.

// What other areas use of this one (they import only this file).
export type { ConsumerInfo, ProducerInfo, SfuOps, TransportInfo } from './protocol.js';
export { SfuClient } from './sfu-client.js';
export { SFU_WATCH_EVERY_MS } from './protocol.js';
