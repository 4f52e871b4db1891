import type { CallsService } from '../../src/calls/calls.service.js';
import type { Logger } from '../../src/platform/logger.js';
import { AppError } from '../../src/platform/errors.js';
import type { SocketAck } from '../../src/platform/device-events.js';
import { SocketSignalSchema } from '../../src/socket-protocol.js';
import type { HubSocket } from '../socket-types.js';

/**
 * `call.signal` over the socket: the same schema and service function as POST /api/calls/{callId}/signal.
 * One listener for every socket: `this` is the socket, whose handshake put the principal in `data`.
 */
export function callSignalHandler(calls: CallsService, logger: Logger) {
  return function (this: HubSocket, body: unknown, ack?: (result: SocketAck) => void) {
    const { principal } = this.data;
    const reply = (result: SocketAck) => {
      if (typeof ack === 'function') ack(result);
    };
    const parsed = SocketSignalSchema.safeParse(body);
    if (!parsed.success) {
      // As REST names them: each field that failed, by its dotted path.
      const details = parsed.error.issues.map((issue) => ({ field: issue.path.join('.'), message: issue.message }));
      return reply({ ok: false, status: 400, code: 'VALIDATION_FAILED', message: 'Invalid call.signal', details });
    }
    const { callId, ...signal } = parsed.data;
    calls.signal(principal, callId, signal).then(
      () => reply({ ok: true }),
      (error: unknown) => {
        if (error instanceof AppError) return reply({ ok: false, status: error.status, code: error.code, message: error.message });
        logger.error({ err: error }, 'call.signal failed');
        reply({ ok: false, status: 500, code: 'INTERNAL_ERROR', message: 'Unexpected server error' });
      },
    );
  };
}
