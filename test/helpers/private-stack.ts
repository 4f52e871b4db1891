import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** A Redis or MongoDB-compatible server of the test's own, to pause (SIGSTOP), kill and start again. */
export interface OwnServer {
  child: ChildProcess;
  url: string;
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

interface StackScripts {
  startRedis(options: { dir: string; persistent: boolean; port?: number }): Promise<{ child: ChildProcess; url: string }>;
  startMongo(options: { h2File: string | null }): Promise<{ child: ChildProcess; url: string }>;
  startRedisCluster(options: { dir: string; masters?: number; replicas?: number; nodeTimeoutMs?: number }): Promise<{ nodes: { port: number; child: ChildProcess }[]; url: string }>;
  stopChild(child: ChildProcess, signal?: NodeJS.Signals): Promise<void>;
}

const scripts = () => import(pathToFileURL(path.join(root, 'scripts', 'stack.mjs')).href) as Promise<StackScripts>;

function own(started: { child: ChildProcess; url: string }, stopChild: StackScripts['stopChild']): OwnServer {
  return {
    ...started,
    pause: () => started.child.kill('SIGSTOP'),
    resume: () => started.child.kill('SIGCONT'),
    async stop() {
      started.child.kill('SIGCONT');
      await stopChild(started.child, 'SIGKILL');
    },
  };
}

/** A Redis of the test's own; `persistent` keeps an append-only file in `dir`, and `port` with `dir` starts it again where an earlier one was. */
export async function ownRedis(options: { persistent?: boolean; port?: number; dir?: string } = {}): Promise<OwnServer & { port: number; dir: string; shutdown(): Promise<void> }> {
  const { startRedis, stopChild } = await scripts();
  const dir = options.dir ?? mkdtempSync(path.join(os.tmpdir(), 'own-redis-'));
  const started = await startRedis({ dir, persistent: options.persistent ?? false, ...(options.port ? { port: options.port } : {}) });
  return {
    ...own(started, stopChild),
    port: Number(new URL(started.url).port),
    dir,
    /** Stops it as an operator's restart does (SIGTERM: it writes its data and exits). */
    shutdown: () => stopChild(started.child, 'SIGTERM'),
  };
}

/** A MongoDB-compatible server (mongo-java-server, in memory) of the test's own. */
export async function ownMongo(): Promise<OwnServer> {
  const { startMongo, stopChild } = await scripts();
  return own(await startMongo({ h2File: null }), stopChild);
}

/** One node of a test's own Redis Cluster. */
export interface ClusterNode {
  port: number;
  child: ChildProcess;
}

/** A Redis Cluster of the test's own (three masters with a replica each unless told), to kill masters of; `url` names it for REDIS_URL. */
export async function ownRedisCluster(options: { masters?: number; replicas?: number } = {}): Promise<{ url: string; nodes: ClusterNode[]; stop(): Promise<void> }> {
  const { startRedisCluster, stopChild } = await scripts();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'own-redis-cluster-'));
  const started = await startRedisCluster({ dir, ...options });
  return {
    ...started,
    async stop() {
      await Promise.all(started.nodes.map((node) => stopChild(node.child, 'SIGKILL')));
    },
  };
}
