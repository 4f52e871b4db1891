import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { headerOf, webhookHandler, type Reply } from '../../packages/app-sdk/src/index.js';

const SECRET = 'whsec_handler-test';

/** The SDK's webhook handler behind a real HTTP server, called as the service calls it (issue 24, item 4). */
describe('app SDK: each delivery handled once, and only once it succeeded', () => {
  let server: http.Server;
  let url: string;
  const calls: string[] = [];
  let failNext = 0;
  let slowMs = 0;

  before(async () => {
    server = http.createServer(
      webhookHandler({
        secrets: () => SECRET,
        onInvocation: async (body): Promise<Reply> => {
          calls.push(body.id);
          if (slowMs > 0) await new Promise((resolve) => setTimeout(resolve, slowMs));
          if (failNext > 0) {
            failNext--;
            throw new Error('the app failed');
          }
          return { type: 'ack', message: 'Done' };
        },
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // Cast: a server listening on a TCP port has an AddressInfo address.
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const deliver = async (deliveryId: string, invocationId: string) => {
    // A copy of a delivery is the same bytes (the service sends the call it recorded again).
    const body = JSON.stringify({ type: 'invocation', id: invocationId, ts: 1_800_000_000, command: 'menu', values: {} });
    const ts = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('hex');
    // Header names in mixed case, as some proxies send them.
    const response = await fetch(url, { method: 'POST', body, headers: { 'Content-Type': 'application/json', 'X-Service-Timestamp': String(ts), 'X-SERVICE-DELIVERY': deliveryId, 'x-service-signature': `v1=${signature}` } });
    return { status: response.status, text: await response.text() };
  };

  it('a handler that failed answers a coded error and the retry of that delivery is handled', async () => {
    failNext = 1;
    assert.deepEqual(await deliver('d-fail', 'i-fail'), { status: 200, text: JSON.stringify({ type: 'error', userMessage: 'Something went wrong; try again', code: 'HANDLER_FAILED' }) });
    const retried = await deliver('d-fail', 'i-fail');
    assert.deepEqual(retried, { status: 200, text: JSON.stringify({ type: 'ack', message: 'Done' }) });
    assert.deepEqual(calls.filter((id) => id === 'i-fail'), ['i-fail', 'i-fail']);
  });

  it('a copy of a handled delivery is answered 204 without calling the app again', async () => {
    assert.equal((await deliver('d-once', 'i-once')).status, 200);
    assert.equal((await deliver('d-once', 'i-once')).status, 204);
    assert.equal(calls.filter((id) => id === 'i-once').length, 1);
  });

  it('concurrent copies are serialized: the app runs once, the copy waits and is answered 204', async () => {
    slowMs = 300;
    const [first, second] = await Promise.all([deliver('d-both', 'i-both'), deliver('d-both', 'i-both')]);
    slowMs = 0;
    assert.deepEqual([first.status, second.status].sort(), [200, 204]);
    assert.equal(calls.filter((id) => id === 'i-both').length, 1);
  });

  it('reads headers case-insensitively from Node objects and Fetch Headers', () => {
    assert.equal(headerOf({ 'X-Service-Delivery': 'd1' }, 'x-service-delivery'), 'd1');
    assert.equal(headerOf(new Headers({ 'x-service-delivery': 'd2' }), 'X-Service-Delivery'), 'd2');
    assert.equal(headerOf({}, 'x-service-delivery'), undefined);
  });
});
