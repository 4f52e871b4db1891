import { defineErrors } from '../platform/errors.js';

/** What the media server refuses (its control API answers these codes, and the api passes them on). */
export const SfuErrors = defineErrors('sfu', {
  MEDIA_NOT_FOUND: { status: 400, message: 'This call has no media session yet' },
  TRANSPORT_NOT_FOUND: { status: 400, message: 'No such transport of this device in the call' },
  PRODUCER_NOT_FOUND: { status: 400, message: 'No such producer in the call' },
  CONSUMER_NOT_FOUND: { status: 400, message: 'No such consumer of this device in the call' },
  MEDIA_LIMIT: { status: 400, message: 'A device\'s media in a call is limited' },
  MEDIA_REJECTED: { status: 400, message: 'The media server refused this' },
  SFU_FAILED: { status: 500, message: 'The media server failed' },
  SFU_UNAVAILABLE: { status: 503, message: 'No media server is available for room calls right now' },
});
