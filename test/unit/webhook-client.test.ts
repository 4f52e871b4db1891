import assert from 'node:assert/strict';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { postWebhook } from '../../src/apps/delivery/webhook-client.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const call = (url: string) => postWebhook({ url, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"type":"ping"}'), timeoutMs: 5_000, allowPrivate: true, okStatus: (status) => status === 200 });
const REPLY = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n{}';

describe('webhook calls on kept-alive connections the app closes (issue 27, item 4)', () => {
  const servers: (http.Server | net.Server)[] = [];
  const sockets = new Set<net.Socket>();
  after(async () => {
    for (const socket of sockets) socket.destroy();
    for (const server of servers) if (server instanceof http.Server) server.closeAllConnections();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it('a call whose pooled connection the app closed before answering is sent again once on a new connection', async () => {
    // An app that answers the first request of each connection and keeps it open, then closes it
    // without a word when the next request arrives on it: what an app's idle timeout does mid-race.
    let connections = 0;
    const server = net.createServer((socket) => {
      sockets.add(socket);
      connections++;
      let requests = 0;
      socket.on('data', (chunk) => {
        if (!chunk.toString().startsWith('POST')) return;
        if (++requests === 1) socket.write(REPLY);
        else socket.destroy();
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`;
    const replies = [];
    for (let i = 0; i < 5; i++) replies.push(await call(url));
    assert.deepEqual(replies.map((reply) => reply.failure), [null, null, null, null, null]);
    assert.ok(connections >= 5, 'each call after the first found its pooled connection closed and went on a new one');
  });

  it('1,000 calls in bursts to an app that closes idle connections after 1 s: none fails', async (context) => {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    server.keepAliveTimeout = 1_000;
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`;
    const failures: string[] = [];
    // Pauses around the app's idle timeout, where a pooled connection is taken as the app closes it.
    for (let burst = 0; burst < 10; burst++) {
      const replies = await Promise.all(Array.from({ length: 100 }, () => call(url)));
      for (const reply of replies) if (reply.failure) failures.push(reply.failure);
      await sleep(960 + burst * 10);
    }
    context.diagnostic(`${failures.length} failures of 1000`);
    assert.deepEqual(failures, []);
  });
});
