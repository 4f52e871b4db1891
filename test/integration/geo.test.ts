import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { makeRoom } from '../helpers/factories.js';

// 81.2.69.142 is in MaxMind's own test range: St Albans, England, in the GeoLite2 data geoip-lite ships.
const UK_IP = '81.2.69.142';

describe('geo-location from the caller\'s IP', () => {
  let t: TestApp;
  let proxied: TestApp;
  let s: Session;
  before(async () => {
    t = await startTestApp();
    proxied = await startTestApp({ TRUST_PROXY_HOPS: '1' });
    s = await signIn(t);
  });
  after(async () => {
    await t.close();
    await proxied.close();
  });

  it('the utilities route locates public addresses and not private ones', async () => {
    const uk = await t.app.inject({ url: '/api/utilities/geo-location', headers: bearer(s.accessToken), remoteAddress: UK_IP });
    assert.equal(uk.statusCode, 200);
    assert.equal(uk.json().ip, UK_IP);
    assert.equal(uk.json().geoLocation.country, 'GB');
    assert.equal(uk.json().geoLocation.city, 'St Albans');
    assert.ok(Math.abs(uk.json().geoLocation.latitude - 51.75) < 0.5);
    const local = await t.app.inject({ url: '/api/utilities/geo-location', headers: bearer(s.accessToken) });
    assert.equal(local.json().geoLocation, null);
    assert.equal((await t.app.inject({ url: '/api/utilities/geo-location' })).statusCode, 401);
  });

  it('X-Forwarded-For counts only behind a configured proxy', async () => {
    const spoofed = await t.app.inject({ url: '/api/utilities/geo-location', headers: { ...bearer(s.accessToken), 'x-forwarded-for': UK_IP } });
    assert.equal(spoofed.json().geoLocation, null, 'not trusted by default');
    const p = await signIn(proxied);
    const forwarded = await proxied.app.inject({ url: '/api/utilities/geo-location', headers: { ...bearer(p.accessToken), 'x-forwarded-for': UK_IP } });
    assert.equal(forwarded.json().geoLocation.country, 'GB');
  });

  it('a posted message without geoLocation gets the one of the request\'s address; a given one is kept', async () => {
    const other = await signIn(t);
    const room = await makeRoom(t, s, { type: 'DIRECT', members: [other] });
    const put = (payload: object, remoteAddress?: string) =>
      t.app.inject({ method: 'PUT', url: `/api/messages/${room.id}`, headers: bearer(s.accessToken), payload: { roomId: room.id, ...payload }, ...(remoteAddress ? { remoteAddress } : {}) });
    const derived = await t.ctx.repos.messages.findById((await put({ message: 'from the UK' }, UK_IP)).json());
    assert.equal(derived?.geoLocation?.city, 'St Albans');
    const given = await t.ctx.repos.messages.findById((await put({ message: 'here', geoLocation: { latitude: 1.5, longitude: 2.5 } }, UK_IP)).json());
    assert.deepEqual(given?.geoLocation, { latitude: 1.5, longitude: 2.5 });
    const local = await t.ctx.repos.messages.findById((await put({ message: 'loopback' })).json());
    assert.equal(local?.geoLocation, null);
    assert.equal((await put({ message: 'bad', geoLocation: { latitude: 91, longitude: 0 } })).statusCode, 400);
  });
});
