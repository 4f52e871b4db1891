import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshPhone, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { connectAll, httpAs } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { until } from '../helpers/wait.js';


describe('translations of broadcast posts and comments', () => {
  let t: TestApp;
  let hub: HubProcess;
  const adminPhone = freshPhone();
  before(async () => {
    t = await startTestApp({ ADMIN_PHONES: adminPhone, SUPPORTED_LANGUAGES: 'en,de,fr' });
    hub = await spawnHub(t.config);
  });
  after(async () => {
    await hub.kill();
    await t.close();
  });

  const api = httpAs(() => t);
  const translate = (s: Session, id: string, language: string, text: string) => api(s, 'PUT', `/api/messages/${id}/translations/${language}`, text, { 'content-type': 'text/plain' });

  async function channel(type = 'BROADCAST') {
    const [creator, admin, member, outsider] = await Promise.all(Array.from({ length: 4 }, () => signIn(t)));
    await connectAll(t, creator!, [admin!, member!]);
    const room = (await api(creator!, 'POST', '/api/rooms', { type, name: `Channel ${Math.random().toString(36).slice(2, 8)}`, memberIds: [admin!.userId, member!.userId] })).json();
    await api(creator!, 'POST', `/api/rooms/${room.id}/admins/${admin!.userId}`);
    const post = (await api(creator!, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'Hello everyone' })).json();
    return { room, post, creator: creator!, admin: admin!, member: member!, outsider: outsider! };
  }

  it('rule 2: creator, admin and site administrator may translate; members and outsiders may not', async () => {
    const c = await channel();
    const siteAdmin = await signIn(t, adminPhone);
    const byCreator = await translate(c.creator, c.post, 'de', 'Hallo zusammen');
    assert.equal(byCreator.statusCode, 200);
    assert.deepEqual(byCreator.json(), { messageId: c.post, originalLanguage: 'en', translations: { en: 'Hello everyone', de: 'Hallo zusammen' } });
    assert.equal((await translate(c.admin, c.post, 'fr', 'Bonjour à tous')).statusCode, 200);
    const bySiteAdmin = await translate(siteAdmin, c.post, 'fr', 'Salut tout le monde');
    assert.equal(bySiteAdmin.statusCode, 200);
    assert.deepEqual(bySiteAdmin.json().translations, { en: 'Hello everyone', de: 'Hallo zusammen', fr: 'Salut tout le monde' });
    for (const who of [c.member, c.outsider]) assert.equal((await translate(who, c.post, 'de', 'Nein')).json().code, 'TRANSLATION_NOT_ALLOWED');
  });

  it('rule 2: only supported languages other than the original; cleaned text; empty removes; JSON strings work', async () => {
    const c = await channel();
    assert.equal((await translate(c.creator, c.post, 'en', 'Hello again')).json().code, 'ORIGINAL_LANGUAGE');
    assert.equal((await translate(c.creator, c.post, 'es', 'Hola')).json().code, 'LANGUAGE_NOT_SUPPORTED');
    assert.equal((await translate(c.creator, c.post, 'not a code', 'x')).statusCode, 400);
    const cleaned = await translate(c.creator, c.post, 'de', '  Hallo\u0007 zusammen  \n\n\n\n\nbis bald ');
    assert.equal(cleaned.json().translations.de, 'Hallo zusammen\n\n\nbis bald');
    const json = await api(c.creator, 'PUT', `/api/messages/${c.post}/translations/fr`, JSON.stringify('Bonjour'), { 'content-type': 'application/json' });
    assert.equal(json.json().translations.fr, 'Bonjour');
    const removed = await translate(c.creator, c.post, 'de', '');
    assert.deepEqual(removed.json().translations, { en: 'Hello everyone', fr: 'Bonjour' });
    assert.equal((await translate(c.creator, 'ffffffffffffffffffffffff', 'de', 'x')).json().code, 'MESSAGE_NOT_FOUND');
    const group = await channel('PUBLIC_GROUP');
    assert.equal((await translate(group.creator, group.post, 'de', 'x')).json().code, 'NOT_A_BROADCAST_POST');
  });

  it('rule 2: a translation edit sends no socket event (and so no push)', async () => {
    const c = await channel();
    const phone = new DeviceClient(c.member.accessToken);
    await phone.connect(hub.port);
    const live: unknown[] = [];
    phone.socket!.onAny((event: string, payload: unknown) => live.push([event, payload]));
    try {
      await translate(c.creator, c.post, 'de', 'Hallo');
      // A post after it: the room's events reach one socket in order, so had the edit sent one, it
      // would come first. The socket gets the post and nothing before it.
      await api(c.creator, 'PUT', `/api/messages/${c.room.id}`, { roomId: c.room.id, message: 'next post' });
      await until(() => live.length >= 1, 'the next post on the socket');
      assert.equal(live.length, 1);
      assert.equal((live[0] as [string])[0], 'message.new');
    } finally {
      phone.close();
    }
  });

  it('comments: where the room allows them, by any enabled member, on their own timeline', async () => {
    const g = await channel('PUBLIC_GROUP');
    const comment = (s: Session, id: string, message: string) => api(s, 'POST', `/api/messages/${id}/comments`, { message });
    assert.equal((await comment(g.member, g.post, 'first!')).json().code, 'COMMENTS_DISABLED');
    await api(g.creator, 'POST', `/api/rooms/${g.room.id}?name=${encodeURIComponent(g.room.name)}&description=&commentsEnabled=true&participantPublishEnabled=false`);
    // Participants may not post here any more, but may comment.
    assert.equal((await api(g.member, 'PUT', `/api/messages/${g.room.id}`, { roomId: g.room.id, message: 'post' })).json().code, 'PUBLISH_NOT_ALLOWED');
    const made = await comment(g.member, g.post, ' first! ');
    assert.equal(made.statusCode, 200);
    assert.equal(made.json().parentId, g.post);
    assert.equal(made.json().message, 'first!');
    assert.equal((await comment(g.outsider, g.post, 'drive-by')).json().code, 'NOT_A_MEMBER');
    assert.equal((await comment(g.member, made.json().id, 'nested')).json().code, 'MESSAGE_NOT_FOUND');
    assert.equal((await comment(g.member, g.post, '   ')).json().code, 'MESSAGE_EMPTY');

    const comments = (await api(g.creator, 'GET', `/api/messages/${g.post}/comments`)).json();
    assert.deepEqual(comments.items.map((m: { message: string }) => m.message), ['first!']);
    const timeline = (await api(g.creator, 'GET', `/api/messages/${g.room.id}`)).json();
    assert.deepEqual(timeline.items.map((m: { message: string }) => m.message), ['Hello everyone'], 'comments stay off the room timeline');
  });
});
