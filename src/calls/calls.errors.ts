import { defineErrors } from '../platform/errors.js';

export const CallsErrors = defineErrors('calls', {
  CALL_NOT_FOUND: { status: 400, message: 'No such call of yours' },
  CALL_SELF: { status: 400, message: 'You cannot call yourself' },
  CALL_NOT_ALLOWED: { status: 400, message: 'This person cannot be called' },
  CALL_NOT_CALLEE: { status: 400, message: 'Only the callee can do this' },
  CALL_NOT_RINGING: { status: 400, message: 'The call is no longer ringing' },
  CALL_NOT_ACTIVE: { status: 400, message: 'The call is not active' },
  CALL_NOT_IN_CALL: { status: 400, message: 'This device is not in the call' },
  CALL_NOT_IN_ROOM: { status: 400, message: 'Media endpoints are for room calls you are in' },
  CALL_ALREADY_JOINED: { status: 400, message: 'Leave the call instead' },
  DEVICE_BUSY: { status: 409, message: 'This device is already in a call' },
  CALL_ALREADY_ANSWERED: { status: 409, message: 'Another device answered first' },
  CALL_FULL: { status: 409, message: 'The room call is full' },
  ROOM_CALL_IN_PROGRESS: { status: 409, message: 'This room has a call going on: join it (details[0].callId)' },
});
