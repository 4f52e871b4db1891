import http from 'node:http';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { freshPhone, lastCode, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { startFront, type Front } from '../helpers/nginx.js';
import { makeRoom, makeUser } from '../helpers/factories.js';
import { ownRedis } from '../helpers/private-stack.js';
import { loggedPort, opsReady, spawnApi, spawnRole, type RoleProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { until } from '../helpers/wait.js';

/** A production-shaped cluster: two api nodes and two hubs behind the production nginx front, a worker and an sfu. */
describe('production topology: nginx in front of two api nodes and two hubs, with a worker and an sfu', () => {
  let t: TestApp;
  let front: Front;
  const apis: (RoleProcess & { port: number; url: string })[] = [];
  const hubs: HubProcess[] = [];
  const others: RoleProcess[] = [];
  const clients: DeviceClient[] = [];


  before(async () => {
    t = await startTestApp();
    // Every phone of the test reaches the front from 127.0.0.1: the per-address sign-in budget is raised for them.
    const env = { TRUST_PROXY_HOPS: '1', SIGNIN_CODES_PER_ADDRESS: '100', SIGNIN_ATTEMPTS_PER_ADDRESS: '100', SMS_OUTBOX_FILE: t.config.SMS_OUTBOX_FILE, CODE_HASH_MEMORY_KIB: '4096', CODE_HASH_PASSES: '2', DEPOSIT_MNEMONIC: t.config.DEPOSIT_MNEMONIC };
    apis.push(...(await Promise.all([spawnApi(t.config, env), spawnApi(t.config, env)])));
    hubs.push(...(await Promise.all([spawnHub(t.config), spawnHub(t.config)])));
    others.push(await spawnRole('worker', t.config, { ...env, OPS_PORT: '0' }, opsReady));
    others.push(await spawnRole('sfu', t.config, { OPS_PORT: '0', SFU_CONTROL_PORT: '0' }, opsReady));
    front = await startFront({ api: apis.map((api) => api.port), hubs: hubs.map((hub) => hub.port) });
  });
  after(async () => {
    for (const c of clients) c.close();
    await front?.stop();
    await Promise.all([...apis, ...hubs, ...others].map((node) => node.kill('SIGKILL')));
    await t.close();
  });

  /** A call through the front, as a phone makes it. */
  const call = async (method: string, url: string, token?: string, body?: unknown) => {
    const res = await fetch(`${front.url}${url}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    const json = res.headers.get('content-type')?.startsWith('application/json') && text;
    return { status: res.status, body: json ? (JSON.parse(text) as Record<string, unknown> & string) : undefined };
  };
  const signInThroughFront = async (): Promise<Session> => {
    const phone = freshPhone();
    assert.equal((await call('POST', '/api/auth/code', undefined, { phone })).status, 204);
    const login = await call('POST', '/api/auth/login', undefined, { phone, code: await lastCode(t.outbox, phone), device: { name: 'Phone', platform: 'ANDROID' } });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    return login.body as unknown as Session;
  };
  const listen = async (session: Session, port: number) => {
    const client = new DeviceClient(session.accessToken);
    clients.push(client);
    await client.connect(port);
    const got: { messageId: string }[] = [];
    client.socket!.on('message.new', (payload: { messageId: string }) => got.push(payload));
    return { client, got };
  };

  it('every node is ready on its operations port; the front serves the api and refuses /metrics', async () => {
    assert.equal((await call('GET', '/readyz')).status, 200);
    assert.equal((await call('GET', '/metrics')).status, 404);
  });

  it('the front\'s media host passes ticket links to the api and nothing else', async () => {
    const onMediaHost = (url: string) =>
      new Promise<number>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port: new URL(front.url).port, path: url, headers: { host: 'media.example.test' } }, (res) => (res.resume(), resolve(res.statusCode!))).on('error', reject);
      });
    assert.equal(await onMediaHost('/readyz'), 404);
    assert.equal(await onMediaHost('/console'), 404);
    assert.equal(await onMediaHost('/media/not-a-valid-ticket-at-all'), 401, 'a ticket link reaches the api');
  });

  it('the front passes the service\'s 503 as it is (code, Retry-After), tries no other node for it, and takes no node out for it', async () => {
    // Two api nodes answering as one does while MongoDB is away.
    const seen: number[] = [0, 0];
    const fakes = await Promise.all(
      [0, 1].map(
        (i) =>
          new Promise<http.Server>((resolve) => {
            const server = http.createServer((req, res) => {
              // The front's readiness probe (GET /healthz) is not one of the test's requests.
              if (req.method === 'PUT') seen[i]!++;
              req.resume();
              res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '3' }).end(JSON.stringify({ status: 503, code: 'DATABASE_UNAVAILABLE', message: 'The database is not answering' }));
            });
            server.listen(0, '127.0.0.1', () => resolve(server));
          }),
      ),
    );
    const outage = await startFront({ api: fakes.map((server) => (server.address() as { port: number }).port), hubs: hubs.map((hub) => hub.port) });
    try {
      for (let i = 0; i < 4; i++) {
        const answer = await fetch(`${outage.url}/api/messages/x`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' });
        seen[2] = (seen[2] ?? 0) + 1;
        assert.equal(answer.status, 503);
        assert.equal(answer.headers.get('retry-after'), '3');
        assert.equal(((await answer.json()) as { code: string }).code, 'DATABASE_UNAVAILABLE');
      }
      assert.equal(seen[0]! + seen[1]!, 4, 'each request reached one node once: no retry on a 503');
      assert.ok(seen[0]! > 0 && seen[1]! > 0, `neither node was taken out for answering 503: ${seen.join(', ')}`);
    } finally {
      await outage.stop();
      for (const server of fakes) server.close();
    }
  });

  it('a real Redis outage under two api nodes: through the front every post is the service\'s 503 (code, Retry-After), no node is taken out, both serve again once Redis is back; the outage\'s recorded dependency_up series fires DependencyDown (promtool)', async () => {
    const redis = await ownRedis({ persistent: true });
    const nodeEnv = { REDIS_URL: redis.url, DEPENDENCY_TIMEOUT_MS: '1000', DEPENDENCY_PROBE_MS: '250', OPS_PORT: '0' };
    const pair = await Promise.all([spawnApi(t.config, nodeEnv), spawnApi(t.config, nodeEnv)]);
    const opsPorts = pair.map((node) => loggedPort(node.output(), 'operations port listening')!);
    const front = await startFront({ api: pair.map((node) => node.port), hubs: hubs.map((hub) => hub.port) });
    // dependency_up{dependency="redis"} of each node, as a scrape reads it, every 250 ms.
    const samples: number[][] = [[], []];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await Promise.all(
          opsPorts.map(async (port, i) => {
            const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
            samples[i]!.push(Number(/^dependency_up\{dependency="redis"\} (\d)/m.exec(text)?.[1] ?? Number.NaN));
          }),
        );
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    try {
      const [poster, other] = await Promise.all([makeUser(t), makeUser(t)]);
      const room = await makeRoom(t, poster, { members: [other] });
      const postThroughFront = () =>
        fetch(`${front.url}/api/messages/${room.id}`, { method: 'PUT', headers: { authorization: `Bearer ${poster.accessToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ roomId: room.id, message: 'Through the front' }) });
      assert.equal((await postThroughFront()).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 1000));

      await redis.shutdown();
      // Both nodes notice (their probes), then every post through the front is answered by the service.
      await until(() => samples.every((series) => series.at(-1) === 0), 'both nodes find Redis away', 10_000);
      for (let i = 0; i < 6; i++) {
        const answer = await postThroughFront();
        const body = await answer.text();
        assert.equal(answer.status, 503, body);
        assert.match(answer.headers.get('content-type') ?? '', /^application\/json/, `the service's answer, not the front's page: ${body}`);
        assert.equal((JSON.parse(body) as { code: string }).code, 'REDIS_UNAVAILABLE');
        assert.match(answer.headers.get('retry-after') ?? '', /^\d+$/);
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const back = await ownRedis({ persistent: true, port: redis.port, dir: redis.dir });
      try {
        await until(async () => (await postThroughFront()).status === 200, 'a post through the front once Redis is back', 15_000);
        // Neither node was taken out: each answers through the front again (the front spreads posts over both).
        await until(() => samples.every((series) => series.at(-1) === 1), 'both nodes find Redis again', 10_000);
        for (const node of pair) assert.equal((await fetch(`${node.url}/readyz`)).status, 200);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      } finally {
        sampling = false;
        await sampler;
        await back.stop();
      }

      // The series one node's scrapes recorded, one scrape per 15 s step (a 250 ms sample each),
      // against the shipped rules: DependencyDown fires once Redis has been away a minute, and not before or after.
      const series = samples[0]!;
      const firstDown = series.indexOf(0);
      const lastDown = series.lastIndexOf(0);
      assert.ok(firstDown > 0 && lastDown - firstDown >= 6 && series.slice(firstDown, lastDown + 1).every((v) => v === 0) && series.at(-1) === 1, `one outage, long enough to page: ${series.join(' ')}`);
      const deploy = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../deploy');
      const dir = mkdtempSync(path.join(os.tmpdir(), 'recorded-outage-'));
      try {
        const step = (i: number) => `${i * 15}s`;
        const test = [
          `rule_files: [${JSON.stringify(path.join(deploy, 'alerts.rules.yml'))}]`,
          'evaluation_interval: 15s',
          'tests:',
          '  - interval: 15s',
          '    input_series:',
          `      - series: 'dependency_up{instance="api-1:9090",dependency="redis"}'`,
          `        values: '${series.join(' ')}'`,
          '    alert_rule_test:',
          `      - { eval_time: ${step(firstDown + 2)}, alertname: DependencyDown, exp_alerts: [] }`,
          `      - eval_time: ${step(firstDown + 5)}`,
          '        alertname: DependencyDown',
          '        exp_alerts:',
          "          - exp_labels: { severity: page, instance: 'api-1:9090', dependency: redis }",
          "            exp_annotations: { summary: 'api-1:9090 finds redis away' }",
          `      - { eval_time: ${step(lastDown + 2)}, alertname: DependencyDown, exp_alerts: [] }`,
        ].join('\n');
        writeFileSync(path.join(dir, 'recorded.test.yml'), `${test}\n`);
        assert.match(execFileSync('promtool', ['test', 'rules', 'recorded.test.yml'], { cwd: dir, encoding: 'utf8' }), /SUCCESS/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    } finally {
      sampling = false;
      await sampler;
      await front.stop();
      await Promise.all(pair.map((node) => node.kill('SIGKILL')));
      await redis.stop();
    }
  });

  it('a phone signs in and connects through the front; a REST post through either api node reaches sockets on both hubs', async () => {
    const [a, b, c] = [await signInThroughFront(), await signInThroughFront(), await signInThroughFront()];
    const room = await call('POST', '/api/rooms', a.accessToken, { type: 'PRIVATE_GROUP', name: 'Topology', memberIds: [b.userId, c.userId] });
    assert.equal(room.status, 200, JSON.stringify(room.body));
    const roomId = (room.body as unknown as { id: string }).id;
    // Not connected to a: each is invited and accepts (issue 32).
    for (const invitee of [b, c]) assert.equal((await call('POST', `/api/rooms/${roomId}/invitation?accept=true`, invitee.accessToken)).status, 200);
    const viaFront = await listen(a, front.port);
    const onHub0 = await listen(b, hubs[0]!.port);
    const onHub1 = await listen(c, hubs[1]!.port);
    // Each api node in turn (the front balances by least connections; here each is called directly too).
    const ids: string[] = [];
    for (const base of [front.url, apis[0]!.url, apis[1]!.url]) {
      const res = await fetch(`${base}/api/messages/${roomId}`, { method: 'PUT', headers: { authorization: `Bearer ${b.accessToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ roomId, message: `via ${base}` }) });
      assert.equal(res.status, 200);
      ids.push((await res.json()) as string);
    }
    for (const [who, listener] of [['front', viaFront], ['hub 0', onHub0], ['hub 1', onHub1]] as const) {
      await until(() => listener.got.length === ids.length, `${who}'s socket to get every post`);
      assert.deepEqual(listener.got.map((message) => message.messageId), ids, `${who}: every post once, in order`);
    }
  });

  it("when the hub holding a phone dies, the phone reconnects through the front to the other hub and loses no device event", async () => {
    const first = await signInThroughFront();
    const client = new DeviceClient(first.accessToken);
    clients.push(client);
    // Which hub holds it: the one whose metrics count a socket more after the connection.
    const held = async (hub: HubProcess) => Number(/^hub_sockets (\d+)/m.exec(await (await fetch(`http://127.0.0.1:${hub.opsPort}/metrics`)).text())?.[1] ?? 0);
    const counted = await Promise.all(hubs.map(held));
    await client.connect(front.port);
    const before = (await Promise.all(hubs.map(held))).map((count, i) => count - counted[i]!);
    assert.ok(before.some((count) => count > 0), 'no hub holds the socket');

    // Device events: each sign-in of another device of the same account is a notice to this one.
    const signInAgain = async () => {
      const me = await call('GET', '/api/users/me', first.accessToken);
      const number = (me.body as unknown as { phone: string }).phone;
      assert.equal((await call('POST', '/api/auth/code', undefined, { phone: number })).status, 204);
      const login = await call('POST', '/api/auth/login', undefined, { phone: number, code: await lastCode(t.outbox, number), device: { name: 'Tablet', platform: 'IOS' } });
      assert.equal(login.status, 200);
    };
    await signInAgain();
    await client.until((received) => received.length >= 1);
    const seenBefore = client.received.length;
    client.ack();

    // The holding hub dies; more events happen while the phone has no socket.
    const victimIndex = before.findIndex((count) => count > 0);
    const disconnected = client.disconnected();
    await hubs[victimIndex]!.kill('SIGKILL');
    await disconnected;
    await signInAgain();
    await signInAgain();

    // The phone reconnects through the same front address with its lastSeq and gets what it missed, once, in order.
    await client.connect(front.port);
    await client.until((received) => received.length >= seenBefore + 2);
    const seqs = client.received.map((entry) => entry.seq);
    assert.deepEqual(seqs, [...new Set(seqs)].sort((x, y) => x - y), 'no event twice, none out of order');
    assert.equal(seqs.length, seenBefore + 2);
    const survivor = hubs[1 - victimIndex]!;
    assert.ok((await held(survivor)) >= 1, 'the other hub holds it now');
  });
  it('stopping a hub drops nobody: its phones are told, reconnect through the front at once and lose nothing; the other hub\'s phones notice nothing', async () => {
    // Two live hubs behind a front of their own (the test above killed one of the first two).
    const live = hubs.filter((hub) => hub.child.exitCode === null && hub.child.signalCode === null);
    hubs.push(await spawnHub(t.config));
    const pair = [live[0]!, hubs.at(-1)!];
    const ownFront = await startFront({ api: apis.map((api) => api.port), hubs: pair.map((hub) => hub.port) });
    try {
      const held = async (hub: HubProcess) => Number(/^hub_sockets (\d+)/m.exec(await (await fetch(`http://127.0.0.1:${hub.opsPort}/metrics`)).text())?.[1] ?? 0);
      const sessions = await Promise.all(Array.from({ length: 5 }, () => signInThroughFront()));
      const phones = sessions.map((session) => new DeviceClient(session.accessToken));
      clients.push(...phones);
      const heldBefore = await Promise.all(pair.map(held));
      await Promise.all(phones.map((phone) => phone.connect(ownFront.port, { reconnect: true })));
      const gained = (await Promise.all(pair.map(held))).map((count, i) => count - heldBefore[i]!);
      assert.equal(gained[0]! + gained[1]!, 5, 'every phone is held');
      // The hub that took the phones is stopped; phones connected straight to the other one stand for its own.
      const victim = gained[0]! > 0 ? 0 : 1;
      const bystanders = (await Promise.all(Array.from({ length: 3 }, () => signInThroughFront()))).map((session) => new DeviceClient(session.accessToken));
      clients.push(...bystanders);
      await Promise.all(bystanders.map((phone) => phone.connect(pair[1 - victim]!.port, { reconnect: true })));

      // Stopped as an orchestrator stops it: SIGTERM.
      const stoppedAt = Date.now();
      await pair[victim]!.kill('SIGTERM');
      await until(() => phones.every((phone) => phone.socket!.connected), 'every phone connected again', 10_000);
      process.stderr.write(`[topology] a hub stopped: its ${gained[victim]} phones connected again within ${Date.now() - stoppedAt} ms\n`);
      const moved = phones.filter((phone) => phone.disconnections.length > 0);
      assert.equal(moved.length, gained[victim], 'only the stopped hub\'s phones were disconnected');
      for (const phone of moved) {
        assert.deepEqual(phone.disconnections, ['transport close'], 'a reason socket.io-client reconnects from');
        assert.equal(phone.drainings, 1, 'told before the close');
      }
      assert.deepEqual(bystanders.map((phone) => phone.disconnections.length), [0, 0, 0], 'the other hub\'s phones noticed nothing');

      // Every phone gets its next device event once.
      for (const [i, session] of sessions.entries()) {
        const number = ((await call('GET', '/api/users/me', session.accessToken)).body as unknown as { phone: string }).phone;
        assert.equal((await call('POST', '/api/auth/code', undefined, { phone: number })).status, 204);
        const login = await call('POST', '/api/auth/login', undefined, { phone: number, code: await lastCode(t.outbox, number), device: { name: 'Tablet', platform: 'IOS' } });
        assert.equal(login.status, 200);
        await phones[i]!.until((received) => received.some((event) => event.event === 'device.added'), 5_000);
        const seqs = phones[i]!.received.map((event) => event.seq);
        assert.deepEqual(seqs, [...new Set(seqs)].sort((x, y) => x - y), 'no event twice');
      }
    } finally {
      // The front's own phones first: nginx waits for its open connections when it stops.
      for (const client of clients) client.close();
      await ownFront.stop();
    }
  });
  it('a hub restarted on its own port (as an orchestrator or systemd restarts it) listens again at once, and its phones come back to it losing nothing', async () => {
    // A fixed port, as in production: a port taken as 0 gets no SO_REUSEADDR from uWebSockets.js, and
    // the connections the stopping hub closed (TIME_WAIT on its side) would keep a new process off it.
    let hub: HubProcess | undefined;
    for (let attempt = 0; !hub && attempt < 3; attempt++) {
      // Another test file's process may take the free port first: another one then.
      hub = await spawnHub(t.config, { SOCKET_PORT: String(await freePort()), OPS_PORT: String(await freePort()) }).catch(() => undefined);
    }
    assert.ok(hub, 'a hub on a fixed port');
    hubs.push(hub);
    const users = await Promise.all(Array.from({ length: 4 }, () => signInThroughFront()));
    const phones = users.map((session) => new DeviceClient(session.accessToken));
    clients.push(...phones);
    await Promise.all(phones.map((phone) => phone.connect(hub.port, { reconnect: true })));
    const { port, opsPort } = hub;
    await hub.kill('SIGTERM');
    const stoppedAt = Date.now();
    const again = await spawnHub(t.config, { SOCKET_PORT: String(port), OPS_PORT: String(opsPort) });
    hubs.push(again);
    process.stderr.write(`[topology] a hub restarted on its port ${port} in ${Date.now() - stoppedAt} ms\n`);
    // The phones, retrying the same address, are back on the new process.
    await until(() => phones.every((phone) => phone.socket!.connected), 'every phone connected again', 10_000);
    for (const phone of phones) assert.deepEqual(phone.disconnections, ['transport close']);
    const held = Number(/^hub_sockets (\d+)/m.exec(await (await fetch(`http://127.0.0.1:${again.opsPort}/metrics`)).text())?.[1] ?? 0);
    assert.equal(held, phones.length, 'the restarted hub holds them');
    // A device event sent now reaches each once.
    for (const [i, session] of users.entries()) {
      const number = ((await call('GET', '/api/users/me', session.accessToken)).body as unknown as { phone: string }).phone;
      assert.equal((await call('POST', '/api/auth/code', undefined, { phone: number })).status, 204);
      assert.equal((await call('POST', '/api/auth/login', undefined, { phone: number, code: await lastCode(t.outbox, number), device: { name: 'Tablet', platform: 'IOS' } })).status, 200);
      await phones[i]!.until((received) => received.some((event) => event.event === 'device.added'), 5_000);
      const seqs = phones[i]!.received.map((event) => event.seq);
      assert.deepEqual(seqs, [...new Set(seqs)].sort((x, y) => x - y), 'no event twice');
    }
    for (const phone of phones) phone.close();
  });
});
