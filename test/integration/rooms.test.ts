import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { connectAll, httpAs } from '../helpers/factories.js';

describe('rooms', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = httpAs(() => t);
  const create = async (s: Session, body: object) => {
    const res = await api(s, 'POST', '/api/rooms', body);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const q = (params: Record<string, string>) => new URLSearchParams(params).toString();

  /** A group with a creator, an admin, an enabled member, a disabled member, a removed member and an outsider. */
  async function cast(type: 'PUBLIC_GROUP' | 'PRIVATE_GROUP' | 'BROADCAST', name = `Group ${Math.random().toString(36).slice(2, 8)}`) {
    const [creator, admin, member, disabled, removed, outsider] = await Promise.all(Array.from({ length: 6 }, () => signIn(t)));
    await connectAll(t, creator!, [admin!, member!, disabled!, removed!]);
    const room = await create(creator!, { type, name, description: 'About us', memberIds: [admin!.userId, member!.userId, disabled!.userId, removed!.userId] });
    assert.equal((await api(creator!, 'POST', `/api/rooms/${room.id}/admins/${admin!.userId}`)).statusCode, 204);
    assert.equal((await api(admin!, 'POST', `/api/rooms/${room.id}/members/${disabled!.userId}/enabled?enabled=false`)).statusCode, 204);
    assert.equal((await api(admin!, 'DELETE', `/api/rooms/${room.id}/members/${removed!.userId}`)).statusCode, 204);
    return { room, creator: creator!, admin: admin!, member: member!, disabled: disabled!, removed: removed!, outsider: outsider! };
  }

  it('a direct chat is between exactly two users and unique per pair', async () => {
    const [a, b, c] = await Promise.all([signIn(t), signIn(t), signIn(t)]);
    // Not connected: a message request, which b accepts by opening the chat back.
    const first = await create(a, { type: 'DIRECT', memberIds: [b.userId] });
    assert.equal(first.memberCount, 1);
    const again = await create(b, { type: 'DIRECT', memberIds: [a.userId] });
    assert.equal(again.id, first.id);
    assert.equal(again.memberCount, 2);
    assert.equal((await api(b, 'GET', '/api/rooms/invitations')).json().totalItems, 0);
    assert.equal(first.name, null);
    assert.equal((await api(a, 'POST', '/api/rooms', { type: 'DIRECT', memberIds: [b.userId, c.userId] })).json().code, 'DIRECT_NEEDS_ONE_MEMBER');
    assert.equal((await api(a, 'POST', '/api/rooms', { type: 'DIRECT', memberIds: [a.userId] })).json().code, 'DIRECT_NEEDS_ONE_MEMBER');
    assert.equal((await api(a, 'POST', '/api/rooms', { type: 'DIRECT', memberIds: ['ghost'] })).json().code, 'USER_NOT_FOUND');
    await api(c, 'POST', `/api/users/blocks?blockedUserId=${a.userId}`);
    assert.equal((await api(a, 'POST', '/api/rooms', { type: 'DIRECT', memberIds: [c.userId] })).json().code, 'BLOCKED');
    // Direct chats are not updated (rule 2).
    assert.equal((await api(a, 'POST', `/api/rooms/${first.id}?${q({ name: 'Renamed', description: '' })}`)).json().code, 'ROOM_NOT_ALLOWED');
  });

  it('creates each kind; names 3 to 50 characters; lists the caller\'s rooms', async () => {
    const s = await signIn(t);
    for (const type of ['PRIVATE_GROUP', 'PUBLIC_GROUP', 'BROADCAST', 'E2EE']) {
      const room = await create(s, { type, name: `Kind ${type} ${Date.now()}` });
      assert.equal(room.type, type);
      assert.equal(room.creatorId, s.userId);
      assert.equal(room.link === null, type === 'PRIVATE_GROUP' || type === 'E2EE');
    }
    assert.equal((await api(s, 'POST', '/api/rooms', { type: 'PRIVATE_GROUP', name: 'ab' })).statusCode, 400);
    assert.equal((await api(s, 'POST', '/api/rooms', { type: 'PRIVATE_GROUP', name: 'x'.repeat(51) })).statusCode, 400);
    assert.equal((await api(s, 'POST', '/api/rooms', { type: 'PRIVATE_GROUP', name: 'abc' })).statusCode, 200);
    assert.equal((await api(s, 'POST', '/api/rooms', { type: 'PRIVATE_GROUP', name: 'x'.repeat(50) })).statusCode, 200);
    assert.equal((await api(s, 'POST', '/api/rooms', { type: 'CHANNEL', name: 'Nope' })).statusCode, 400);
    const mine = (await api(s, 'GET', '/api/rooms')).json();
    assert.equal(mine.totalItems, 6);
  });

  it('rule 1: get for creator, admin, and enabled members of public groups only', async () => {
    const pub = await cast('PUBLIC_GROUP');
    for (const who of [pub.creator, pub.admin, pub.member]) assert.equal((await api(who, 'GET', `/api/rooms/${pub.room.id}`)).statusCode, 200);
    for (const who of [pub.disabled, pub.removed, pub.outsider]) {
      const res = await api(who, 'GET', `/api/rooms/${pub.room.id}`);
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'ROOM_NOT_FOUND');
    }
    const priv = await cast('PRIVATE_GROUP');
    for (const who of [priv.creator, priv.admin]) assert.equal((await api(who, 'GET', `/api/rooms/${priv.room.id}`)).statusCode, 200);
    assert.equal((await api(priv.member, 'GET', `/api/rooms/${priv.room.id}`)).statusCode, 400);
    assert.equal((await api(pub.creator, 'GET', '/api/rooms/no-such-room')).statusCode, 400);
  });

  it('rule 2: update by creator or admin; limits at their edges; switches only for public groups and only both', async () => {
    const pub = await cast('PUBLIC_GROUP');
    const update = (s: Session, params: Record<string, string>) => api(s, 'POST', `/api/rooms/${pub.room.id}?${q(params)}`);
    for (const who of [pub.member, pub.disabled, pub.removed, pub.outsider]) {
      assert.equal((await update(who, { name: 'Taken over', description: '' })).json().code, 'ROOM_NOT_ALLOWED');
    }
    assert.equal((await update(pub.admin, { name: 'ab', description: '' })).statusCode, 400);
    assert.equal((await update(pub.admin, { name: 'x'.repeat(51), description: '' })).statusCode, 400);
    assert.equal((await update(pub.admin, { name: 'abc', description: 'd'.repeat(251) })).statusCode, 400);
    assert.equal((await update(pub.admin, { name: 'Only name' })).statusCode, 400);
    const edge = await update(pub.admin, { name: `${pub.room.name}!`.slice(0, 50), description: 'd'.repeat(250) });
    assert.equal(edge.statusCode, 200);
    assert.equal(edge.json().description.length, 250);

    const one = await update(pub.creator, { name: edge.json().name, description: 'x', commentsEnabled: 'true' });
    assert.equal(one.json().commentsEnabled, false, 'one switch alone changes nothing');
    const both = await update(pub.creator, { name: edge.json().name, description: 'x', commentsEnabled: 'true', participantPublishEnabled: 'false' });
    assert.deepEqual([both.json().commentsEnabled, both.json().participantPublishEnabled], [true, false]);

    const priv = await cast('PRIVATE_GROUP');
    const privBoth = await api(priv.creator, 'POST', `/api/rooms/${priv.room.id}?${q({ name: 'Private renamed', description: '', commentsEnabled: 'true', participantPublishEnabled: 'false' })}`);
    assert.deepEqual([privBoth.json().name, privBoth.json().commentsEnabled, privBoth.json().participantPublishEnabled], ['Private renamed', false, true]);
  });

  it('rule 2: renaming a public group moves its link, keeps the old one as a redirect, and refuses a link in use', async () => {
    const creator = await signIn(t);
    const stamp = Date.now();
    const room = await create(creator, { type: 'PUBLIC_GROUP', name: `Hiking Club ${stamp}` });
    assert.equal(room.link, `hiking-club-${stamp}`);
    const other = await create(creator, { type: 'PUBLIC_GROUP', name: `Climbing ${stamp}` });
    const renamed = await api(creator, 'POST', `/api/rooms/${room.id}?${q({ name: `Trail Runners ${stamp}`, description: '' })}`);
    assert.equal(renamed.json().link, `trail-runners-${stamp}`);
    for (const link of [`hiking-club-${stamp}`, `trail-runners-${stamp}`, `HIKING-CLUB-${stamp}`]) {
      const resolved = await api(creator, 'GET', `/api/rooms/by-link/${link}`);
      assert.equal(resolved.json().id, room.id, link);
    }
    // The other room's link, and the old link (a redirect of the first room), are taken.
    assert.equal((await api(creator, 'POST', `/api/rooms/${room.id}?${q({ name: `Climbing ${stamp}`, description: '' })}`)).json().code, 'ROOM_LINK_TAKEN');
    assert.equal((await api(creator, 'POST', `/api/rooms/${other.id}?${q({ name: `Hiking Club ${stamp}`, description: '' })}`)).json().code, 'ROOM_LINK_TAKEN');
    assert.equal((await api(creator, 'POST', '/api/rooms', { type: 'PUBLIC_GROUP', name: `Trail runners ${stamp}` })).json().code, 'ROOM_LINK_TAKEN');
    assert.equal((await api(creator, 'GET', '/api/rooms/by-link/nothing-here')).statusCode, 400);
  });

  it('rule 3: the publish switch by creator or admin, for enabled members only', async () => {
    const pub = await cast('PUBLIC_GROUP');
    const url = (who: Session, flag: string) => `/api/rooms/${pub.room.id}/${who.userId}/publish-enabled?publishEnabled=${flag}`;
    assert.equal((await api(pub.admin, 'POST', url(pub.member, 'false'))).statusCode, 204);
    const stored = await t.ctx.repos.roomMembers.find(pub.room.id, pub.member.userId);
    assert.equal(stored?.publishEnabled, false);
    for (const who of [pub.member, pub.outsider, pub.disabled]) assert.equal((await api(who, 'POST', url(pub.member, 'true'))).statusCode, 400);
    for (const target of [pub.disabled, pub.removed, pub.outsider]) {
      assert.equal((await api(pub.creator, 'POST', url(target, 'true'))).json().code, 'NOT_A_MEMBER');
    }
    assert.equal((await api(pub.creator, 'POST', url(pub.member, 'maybe'))).statusCode, 400);
  });

  it('rule 4: mute get and set for enabled members only', async () => {
    const pub = await cast('PUBLIC_GROUP');
    assert.deepEqual((await api(pub.member, 'GET', `/api/rooms/${pub.room.id}/muted`)).json(), { muted: false });
    assert.deepEqual((await api(pub.member, 'POST', `/api/rooms/${pub.room.id}/muted?muted=true`)).json(), { muted: true });
    assert.deepEqual((await api(pub.member, 'GET', `/api/rooms/${pub.room.id}/muted`)).json(), { muted: true });
    assert.deepEqual((await api(pub.creator, 'GET', `/api/rooms/${pub.room.id}/muted`)).json(), { muted: false }, 'one member\'s setting only');
    for (const who of [pub.disabled, pub.removed, pub.outsider]) {
      assert.equal((await api(who, 'GET', `/api/rooms/${pub.room.id}/muted`)).json().code, 'NOT_A_MEMBER');
      assert.equal((await api(who, 'POST', `/api/rooms/${pub.room.id}/muted?muted=true`)).json().code, 'NOT_A_MEMBER');
    }
  });

  it('rule 5: join public groups muted; rejoin after leaving; refused after removal; broadcast returned as is; others 400', async () => {
    const pub = await cast('PUBLIC_GROUP');
    const joined = await api(pub.outsider, 'POST', `/api/rooms/${pub.room.id}/join`);
    assert.equal(joined.statusCode, 200);
    // creator, admin, member, disabled (the removed one is out), and now the outsider.
    assert.equal(joined.json().memberCount, 5);
    assert.deepEqual((await api(pub.outsider, 'GET', `/api/rooms/${pub.room.id}/muted`)).json(), { muted: true }, 'new members start muted');
    assert.equal((await api(pub.outsider, 'POST', `/api/rooms/${pub.room.id}/leave`)).statusCode, 204);
    assert.equal((await api(pub.outsider, 'GET', `/api/rooms/${pub.room.id}`)).statusCode, 400);
    assert.equal((await api(pub.outsider, 'POST', `/api/rooms/${pub.room.id}/join`)).statusCode, 200, 'back into a group one left');
    const removed = await api(pub.removed, 'POST', `/api/rooms/${pub.room.id}/join`);
    assert.equal(removed.json().code, 'REMOVED_BY_ADMIN');
    // An admin may bring them back: the admin is not their connection, so it is an invitation they accept.
    assert.equal((await api(pub.admin, 'POST', `/api/rooms/${pub.room.id}/members/${pub.removed.userId}`)).statusCode, 202);
    assert.equal((await api(pub.removed, 'POST', `/api/rooms/${pub.room.id}/invitation?accept=true`)).statusCode, 200);
    assert.equal((await api(pub.removed, 'GET', `/api/rooms/${pub.room.id}/muted`)).statusCode, 200, 'a member again');

    const priv = await cast('PRIVATE_GROUP');
    assert.equal((await api(priv.outsider, 'POST', `/api/rooms/${priv.room.id}/join`)).json().code, 'ROOM_NOT_JOINABLE');
    const broadcast = await cast('BROADCAST');
    const before = (await t.ctx.repos.rooms.findById(broadcast.room.id))!.memberCount;
    const opened = await api(broadcast.outsider, 'POST', `/api/rooms/${broadcast.room.id}/join`);
    assert.equal(opened.statusCode, 200);
    assert.equal(opened.json().id, broadcast.room.id);
    assert.equal((await t.ctx.repos.rooms.findById(broadcast.room.id))!.memberCount, before, 'nothing changes');
    const hidden = await create(broadcast.creator, { type: 'BROADCAST', name: `Hidden ${Date.now()}`, visible: false });
    assert.equal((await api(broadcast.outsider, 'POST', `/api/rooms/${hidden.id}/join`)).statusCode, 400);
  });

  it('rule 6: search public groups largest first, by name words or most popular, paged', async () => {
    const s = await signIn(t);
    const tag = `zq${Date.now().toString(36)}`;
    const small = await create(s, { type: 'PUBLIC_GROUP', name: `${tag} Small Circle` });
    const big = await create(s, { type: 'PUBLIC_GROUP', name: `${tag} Big Circle` });
    await create(s, { type: 'PRIVATE_GROUP', name: `${tag} Secret Circle` });
    for (const joiner of await Promise.all([signIn(t), signIn(t)])) await api(joiner, 'POST', `/api/rooms/${big.id}/join`);
    const found = (await api(s, 'POST', '/api/rooms/search', { query: tag })).json();
    assert.deepEqual(found.items.map((r: { id: string }) => r.id), [big.id, small.id]);
    const prefix = (await api(s, 'POST', '/api/rooms/search', { query: `${tag} SMA` })).json();
    assert.deepEqual(prefix.items.map((r: { id: string }) => r.id), [small.id]);
    const paged = (await api(s, 'POST', '/api/rooms/search', { query: tag, pageSize: 1, currentPage: 1 })).json();
    assert.deepEqual([paged.items[0].id, paged.totalItems, paged.totalPages], [small.id, 2, 2]);
    const popular = (await api(s, 'POST', '/api/rooms/search', {})).json();
    const sizes = popular.items.map((r: { memberCount: number }) => r.memberCount);
    assert.deepEqual(sizes, [...sizes].sort((a: number, b: number) => b - a));
    assert.ok(popular.items.every((r: { type: string }) => r.type === 'PUBLIC_GROUP'));
    assert.equal((await api(s, 'POST', '/api/rooms/search', { pageSize: 101 })).statusCode, 400);
  });

  it('membership administration: who may add, remove, disable and make admins', async () => {
    const g = await cast('PRIVATE_GROUP');
    const newcomer = await signIn(t);
    for (const who of [g.member, g.disabled, g.outsider]) {
      assert.equal((await api(who, 'POST', `/api/rooms/${g.room.id}/members/${newcomer.userId}`)).json().code, 'ROOM_NOT_ALLOWED');
      assert.equal((await api(who, 'POST', `/api/rooms/${g.room.id}/admins/${g.member.userId}`)).json().code, 'ROOM_NOT_ALLOWED');
    }
    assert.equal((await api(g.admin, 'DELETE', `/api/rooms/${g.room.id}/members/${g.creator.userId}`)).json().code, 'CANNOT_REMOVE_CREATOR');
    assert.equal((await api(g.admin, 'POST', `/api/rooms/${g.room.id}/admins/${g.disabled.userId}`)).json().code, 'NOT_A_MEMBER');
    assert.equal((await api(g.admin, 'DELETE', `/api/rooms/${g.room.id}/members/${g.outsider.userId}`)).json().code, 'NOT_A_MEMBER');
    assert.equal((await api(g.admin, 'POST', `/api/rooms/${g.room.id}/members/ghost`)).json().code, 'USER_NOT_FOUND');
    assert.equal((await api(g.creator, 'DELETE', `/api/rooms/${g.room.id}/admins/${g.admin.userId}`)).statusCode, 204);
    assert.equal((await api(g.admin, 'POST', `/api/rooms/${g.room.id}/members/${newcomer.userId}`)).json().code, 'ROOM_NOT_ALLOWED', 'no longer an admin');
    assert.equal((await api(g.outsider, 'POST', `/api/rooms/${g.room.id}/leave`)).json().code, 'NOT_A_MEMBER');
    const room = (await api(g.creator, 'GET', `/api/rooms/${g.room.id}`)).json();
    assert.deepEqual(room.admins, []);
    // creator, ex-admin, member, disabled: four active members.
    assert.equal(room.memberCount, 4);
  });
});

describe('broadcast rooms in the caller\'s language', () => {
  it('joining a visible broadcast room shows its translation for the caller\'s language, else the original, and changes nothing', async () => {
    const t = await startTestApp({ SUPPORTED_LANGUAGES: 'en,de,fr' });
    const api = httpAs(() => t);
    try {
      const [creator, german, french, member] = await Promise.all([signIn(t), signIn(t), signIn(t), signIn(t)]);
      await api(german, 'PATCH', '/api/users/me', { language: 'de' });
      await api(french, 'PATCH', '/api/users/me', { language: 'fr' });
      await connectAll(t, creator, [member]);
      const room = (await api(creator, 'POST', '/api/rooms', { type: 'BROADCAST', name: 'Daily News', description: 'News every day', memberIds: [member.userId] })).json();
      assert.equal(room.language, 'en');
      const translated = await api(creator, 'PUT', `/api/rooms/${room.id}/translations/de`, { name: 'Tägliche Nachrichten', description: 'Jeden Tag Neues' });
      assert.equal(translated.statusCode, 200);
      assert.deepEqual(translated.json().translatedInto, ['de']);

      const inGerman = (await api(german, 'POST', `/api/rooms/${room.id}/join`)).json();
      assert.deepEqual([inGerman.name, inGerman.description, inGerman.language], ['Tägliche Nachrichten', 'Jeden Tag Neues', 'de']);
      const inFrench = (await api(french, 'POST', `/api/rooms/${room.id}/join`)).json();
      assert.deepEqual([inFrench.name, inFrench.language], ['Daily News', 'en'], 'no French version: the original');
      assert.equal((await t.ctx.repos.rooms.findById(room.id))!.memberCount, 2, 'joining a broadcast room changes nothing');

      assert.equal((await api(member, 'PUT', `/api/rooms/${room.id}/translations/fr`, { name: 'Nouvelles' })).json().code, 'ROOM_NOT_ALLOWED');
      assert.equal((await api(creator, 'PUT', `/api/rooms/${room.id}/translations/en`, { name: 'Again' })).json().code, 'ORIGINAL_LANGUAGE');
      assert.equal((await api(creator, 'PUT', `/api/rooms/${room.id}/translations/es`, { name: 'Noticias' })).json().code, 'LANGUAGE_NOT_SUPPORTED');
      assert.equal((await api(creator, 'PUT', `/api/rooms/${room.id}/translations/fr`, { name: 'ab' })).json().code, 'ROOM_NAME_INVALID');
      const removed = await api(creator, 'PUT', `/api/rooms/${room.id}/translations/de`, { name: '' });
      assert.deepEqual(removed.json().translatedInto, []);
      const group = (await api(creator, 'POST', '/api/rooms', { type: 'PUBLIC_GROUP', name: `Group ${Date.now()}` })).json();
      assert.equal((await api(creator, 'PUT', `/api/rooms/${group.id}/translations/de`, { name: 'Gruppe' })).json().code, 'NOT_A_BROADCAST_ROOM');
    } finally {
      await t.close();
    }
  });
});
