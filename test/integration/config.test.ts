import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '../../src/platform/config.js';

const mainJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../main.js');

function runMain(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [mainJs, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe('configuration', () => {
  it('needs nothing in development', () => {
    const config = loadConfig({});
    assert.equal(config.HTTP_PORT, 8080);
    assert.equal(config.SOCKET_PORT, 8081);
    assert.equal(config.SMS_PROVIDER, 'outbox');
    assert.equal(config.ACCESS_TOKEN_TTL, 900);
  });

  it('parses durations and lists', () => {
    const config = loadConfig({ ACCESS_TOKEN_TTL: '15m', REFRESH_TOKEN_TTL: '30d', ADMIN_PHONES: '+14155550123, +4915112345678' });
    assert.equal(config.ACCESS_TOKEN_TTL, 900);
    assert.equal(config.REFRESH_TOKEN_TTL, 2_592_000);
    assert.deepEqual(config.ADMIN_PHONES, ['+14155550123', '+4915112345678']);
  });

  it('names every bad variable and what is wrong', () => {
    assert.throws(
      () => loadConfig({ HTTP_PORT: 'eighty', ACCESS_TOKEN_TTL: '15 minutes', ADMIN_PHONES: '12345' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        const text = error.problems.join('\n');
        assert.match(text, /HTTP_PORT/);
        assert.match(text, /ACCESS_TOKEN_TTL: expected a duration/);
        assert.match(text, /ADMIN_PHONES/);
        return true;
      },
    );
  });

  it('requires secrets and a real SMS provider in production', () => {
    assert.throws(() => loadConfig({ NODE_ENV: 'production' }), (error: unknown) => {
      const text = (error as ConfigError).problems.join('\n');
      assert.match(text, /JWT_SECRET: is required in production/);
      assert.match(text, /TWILIO_ACCOUNT_SID: is required when SMS_PROVIDER is twilio/);
      return true;
    });
  });

  it('keeps the code-hash cost at its default, and at OWASP\'s minimum or above in production', () => {
    assert.deepEqual([loadConfig({}).CODE_HASH_MEMORY_KIB, loadConfig({}).CODE_HASH_PASSES], [65_536, 3]);
    assert.equal(loadConfig({ CODE_HASH_MEMORY_KIB: '4096' }).CODE_HASH_MEMORY_KIB, 4096);
    assert.throws(() => loadConfig({ CODE_HASH_MEMORY_KIB: '512' }), /CODE_HASH_MEMORY_KIB/);
    assert.throws(() => loadConfig({ NODE_ENV: 'production', CODE_HASH_MEMORY_KIB: '4096' }), (error: unknown) => {
      assert.match((error as ConfigError).problems.join('\n'), /CODE_HASH_MEMORY_KIB: must be at least 19456 KiB with at least 2 passes in production/);
      return true;
    });
  });

  it('takes crash points for chaos tests only: named ones, never in production', () => {
    assert.deepEqual(loadConfig({}).CRASH_AT, []);
    assert.deepEqual(loadConfig({ CRASH_AT: 'app-payment.changed' }).CRASH_AT, ['app-payment.changed']);
    assert.throws(() => loadConfig({ CRASH_AT: 'nowhere' }), /CRASH_AT/);
    assert.throws(() => loadConfig({ NODE_ENV: 'production', CRASH_AT: 'app-payment.changed' }), (error: unknown) => {
      assert.match((error as ConfigError).problems.join('\n'), /CRASH_AT: is for chaos tests only/);
      return true;
    });
  });

  it('stops the process with a message naming the variable', async () => {
    const { code, stderr } = await runMain({ HTTP_PORT: '70000' });
    assert.equal(code, 2);
    assert.match(stderr, /HTTP_PORT/);
    const roles = await runMain({}, ['--role=api,chat']);
    assert.equal(roles.code, 2);
    assert.match(roles.stderr, /--role/);
  });
});
