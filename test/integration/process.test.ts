import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { io as connect } from 'socket.io-client';
import { freePort } from '../helpers/ports.js';

const mainJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../main.js');

describe('the service process', () => {
  it('runs every role on real ports, then shuts down cleanly on SIGTERM', async () => {
    const [httpPort, socketPort, sfuPort] = [await freePort(), await freePort(), await freePort()];
    const id = randomUUID().slice(0, 8);
    const child = spawn(process.execPath, [mainJs, '--role=all'], {
      env: {
        ...process.env,
        HTTP_PORT: String(httpPort),
        SOCKET_PORT: String(socketPort),
        SFU_CONTROL_PORT: String(sfuPort),
        SFU_RTC_MIN_PORT: '42000',
        SFU_RTC_MAX_PORT: '42999',
        MONGODB_DB: `p_${id}`,
        REDIS_PREFIX: `p:${id}:`,
        LOG_LEVEL: 'info',
        SMS_OUTBOX_FILE: path.join(process.env.TEST_TMP ?? '/tmp', `sms-p-${id}.jsonl`),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      let ready = false;
      for (let i = 0; i < 100 && !ready; i++) {
        ready = await fetch(`http://127.0.0.1:${httpPort}/readyz`).then((res) => res.status === 200, () => false);
        if (!ready) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(ready, `never ready:\n${output}`);
      for (let i = 0; i < 50 && !output.includes('Chat platform running'); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.match(output, new RegExp(`Socket hub +ws://127\\.0\\.0\\.1:${socketPort}/socket\\.io/`));
      assert.match(output, /Chain \(dev\) +http:\/\/127\.0\.0\.1:\d+ \(USDT at 0x[0-9a-fA-F]{40}\)/);
      assert.match(output, /"msg":"workers running"/);
      // The sfu role: its control API answers on its port, to the shared secret only.
      assert.match(output, new RegExp(`SFU control +http://127\\.0\\.0\\.1:${sfuPort}`));
      const control = await fetch(`http://127.0.0.1:${sfuPort}/sfu/producers`, { method: 'POST', body: '{"callId":"x"}' });
      assert.equal(control.status, 401);

      // The hub answers on its own port: an unauthenticated socket is refused by the handshake.
      const socket = connect(`http://127.0.0.1:${socketPort}`, { transports: ['websocket'], reconnection: false, auth: {} });
      const refusal = await new Promise<string>((resolve) => socket.once('connect_error', (error) => resolve(error.message)));
      socket.close();
      assert.equal(refusal, 'UNAUTHORIZED');
    } finally {
      child.kill('SIGTERM');
    }
    const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('timeout'), 10_000))]);
    assert.equal(code, 0, output);
    assert.match(output, /"msg":"stopped"/);
  });
});
