import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { io as connect, type Socket } from 'socket.io-client';
import type { Config } from '../../src/platform/config.js';
import { freePort } from './ports.js';

const mainJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../main.js');

export interface HubProcess {
  port: number;
  child: ChildProcess;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** A hub node as its own process (`--role=realtime`), sharing the test's database and Redis prefix. */
export async function spawnHub(config: Config, env: Record<string, string> = {}): Promise<HubProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [mainJs, '--role=realtime'], {
    env: {
      ...process.env,
      MONGODB_URL: config.MONGODB_URL,
      MONGODB_DB: config.MONGODB_DB,
      REDIS_URL: config.REDIS_URL,
      REDIS_PREFIX: config.REDIS_PREFIX,
      JWT_SECRET: config.JWT_SECRET,
      PRESENCE_TTL: String(config.PRESENCE_TTL),
      INBOX_MAX_EVENTS: String(config.INBOX_MAX_EVENTS),
      SOCKET_PORT: String(port),
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    }),
  );
  // Ready when its port answers an engine.io handshake, as a load balancer's probe would see it.
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (exitCode !== undefined) throw new Error(`hub exited with ${exitCode}: ${output}`);
    const answered = await fetch(`http://127.0.0.1:${port}/socket.io/?EIO=4&transport=polling`).then((res) => res.status === 200, () => false);
    if (answered) break;
    if (Date.now() > deadline) throw new Error(`hub did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    child,
    async kill(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

export interface Received {
  event: string;
  seq: number;
  at: string;
  data: Record<string, unknown>;
}

/**
 * A phone's socket as a client app codes it: connects with its token and the last sequence it
 * processed, records every device event, and can move to another node keeping its `lastSeq`.
 */
export class DeviceClient {
  socket: Socket | null = null;
  readonly received: Received[] = [];
  lastSeq = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly token: string) {}

  connect(port: number): Promise<void> {
    const socket = connect(`http://127.0.0.1:${port}`, {
      path: '/socket.io/',
      transports: ['websocket'],
      auth: { token: this.token, lastSeq: this.lastSeq },
      reconnection: false,
      forceNew: true,
    });
    this.socket = socket;
    socket.onAny((event: string, envelope: { seq: number; at: string; data: Record<string, unknown> }) => {
      if (typeof envelope?.seq !== 'number') return;
      this.received.push({ event, ...envelope });
      this.lastSeq = envelope.seq;
      for (const wake of this.waiters.splice(0)) wake();
    });
    return new Promise((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
  }

  disconnected(): Promise<string> {
    return new Promise((resolve) => this.socket!.once('disconnect', (reason) => resolve(reason)));
  }

  /** Resolves once `predicate` holds over what was received; rejects after `ms`. */
  async until(predicate: (received: Received[]) => boolean, ms = 5_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!predicate(this.received)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; received ${JSON.stringify(this.received.map((r) => [r.event, r.seq]))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  ack(seq = this.lastSeq): void {
    this.socket?.emit('inbox.ack', { seq });
  }

  close(): void {
    this.socket?.disconnect();
  }
}
