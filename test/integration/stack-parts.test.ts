import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';

const stackScript = pathToFileURL(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/stack.mjs')).href;

interface Stack {
  mongoUrl: string;
  redisUrl: string;
  evmRpcUrl: string;
  usdtAddress: string;
  pids: { redis?: number; mongo?: number; chain?: number };
  stop(): Promise<void>;
}

describe('the local stack (scripts/stack.mjs)', () => {
  it('MONGODB_URL, REDIS_URL and the chain each replace their own part: a given Redis is used, the rest is started', async () => {
    const { startStack } = (await import(stackScript)) as { startStack(options: { dataDir: string; persistent: boolean }): Promise<Stack> };
    const given = process.env.REDIS_URL!;
    const saved = { MONGODB_URL: process.env.MONGODB_URL, EVM_RPC_URL: process.env.EVM_RPC_URL, USDT_TOKEN_ADDRESS: process.env.USDT_TOKEN_ADDRESS };
    delete process.env.MONGODB_URL;
    delete process.env.EVM_RPC_URL;
    delete process.env.USDT_TOKEN_ADDRESS;
    const dir = mkdtempSync(path.join(process.env.TEST_TMP ?? os.tmpdir(), 'stack-parts-'));
    let stack: Stack | undefined;
    try {
      stack = await startStack({ dataDir: dir, persistent: false });
      assert.equal(stack.redisUrl, given, 'the given Redis is used');
      assert.equal(stack.pids.redis, undefined, 'no Redis was started');
      assert.notEqual(stack.mongoUrl, saved.MONGODB_URL, 'a database was started');
      assert.ok(stack.pids.mongo && stack.pids.chain, 'the database and the chain were started');
      const redis = new Redis(stack.redisUrl, { lazyConnect: true });
      await redis.connect();
      assert.equal(await redis.ping(), 'PONG');
      await redis.quit();
    } finally {
      await stack?.stop();
      Object.assign(process.env, saved);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
