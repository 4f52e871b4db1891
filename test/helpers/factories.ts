import type { LightMyRequestResponse } from 'fastify';
import { bearer, freshPhone, signIn, type Session, type TestApp } from './app.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A request as the device of `s` makes it: the one HTTP helper of the tests. */
export type Http = (s: Session, method: HttpMethod, url: string, payload?: object | string, headers?: Record<string, string>) => Promise<LightMyRequestResponse>;

/** The HTTP helper over the test app `t()` gives (a getter, since test files assign it in `before`). */
export function httpAs(t: () => TestApp): Http {
  return (s, method, url, payload, headers = {}) =>
    t().app.inject({ method, url, headers: { ...bearer(s.accessToken), ...headers }, ...(payload === undefined ? {} : { payload }) });
}

/** A new user signed in on one device (a fresh phone number each time). */
export function makeUser(t: TestApp, device?: { name: string; platform: string }): Promise<Session> {
  return signIn(t, freshPhone(), device);
}

/** Another device of the user with this phone number: a second sign-in. */
export function makeDevice(t: TestApp, phone: string, device = { name: 'Second phone', platform: 'ANDROID' }): Promise<Session> {
  return signIn(t, phone, device);
}

/**
 * Connects two users as people do: `a` sends a connection request, `b` accepts it. Connections
 * may add each other to rooms directly; anyone else is invited (issue 32).
 */
export async function connect(t: TestApp, a: Session, b: Session): Promise<void> {
  const http = httpAs(() => t);
  const sent = await http(a, 'POST', `/api/users/connection-requests?recipientId=${b.userId}`);
  if (sent.statusCode === 400 && sent.json().code === 'ALREADY_CONNECTED') return;
  if (sent.statusCode !== 204) throw new Error(`connection request answered ${sent.statusCode}: ${sent.body}`);
  const incoming = (await http(b, 'GET', '/api/users/connection-requests')).json() as { items: { id: string; status: string; sender: { id: string } }[] };
  const request = incoming.items.find((r) => r.sender.id === a.userId && r.status === 'PENDING');
  if (!request) throw new Error('the connection request did not arrive');
  const answered = await http(b, 'POST', `/api/users/connection-requests/incoming/${request.id}?accept=true`);
  if (answered.statusCode !== 200) throw new Error(`accepting answered ${answered.statusCode}: ${answered.body}`);
}

/**
 * Connects `owner` with each of `others` as a fixture, straight in the database: no requests, no
 * device events in anyone's inbox (tests that count events stay exact). So they can be put in the
 * owner's rooms at once.
 */
export async function connectAll(t: TestApp, owner: Session, others: Session[]): Promise<void> {
  for (const other of others) await t.ctx.repos.connections.connect(owner.userId, other.userId, new Date());
}

export type RoomType = 'DIRECT' | 'PRIVATE_GROUP' | 'PUBLIC_GROUP' | 'BROADCAST' | 'E2EE';

/** A room made by `owner` through the API, with `members` (connected to the owner first) in it; its RoomDto. Throws unless 200. */
export async function makeRoom(
  t: TestApp,
  owner: Session,
  options: { type?: RoomType; name?: string; members?: Session[]; description?: string } = {},
): Promise<{ id: string; type: RoomType; name: string | null; link: string | null; [field: string]: unknown }> {
  const type = options.type ?? 'PRIVATE_GROUP';
  await connectAll(t, owner, options.members ?? []);
  const payload = {
    type,
    ...(type === 'DIRECT' ? {} : { name: options.name ?? `Room ${Math.random().toString(36).slice(2, 10)}` }),
    ...(options.description === undefined ? {} : { description: options.description }),
    memberIds: (options.members ?? []).map((member) => member.userId),
  };
  const res = await httpAs(() => t)(owner, 'POST', '/api/rooms', payload);
  if (res.statusCode !== 200) throw new Error(`room creation answered ${res.statusCode}: ${res.body}`);
  return res.json();
}

/** A message posted by `s` into the room; its id. Throws unless 200. */
export async function postMessage(t: TestApp, s: Session, roomId: string, message: string, extra: object = {}): Promise<string> {
  const res = await httpAs(() => t)(s, 'PUT', `/api/messages/${roomId}`, { roomId, message, ...extra });
  if (res.statusCode !== 200) throw new Error(`posting answered ${res.statusCode}: ${res.body}`);
  return res.json();
}
