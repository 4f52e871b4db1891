import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { callRings, isTimeZone, quietNow } from '../../src/users/quiet.js';

describe('do-not-disturb and quiet hours (src/users/quiet.ts)', () => {
  const hours = { doNotDisturbUntil: null, quietHours: { start: '17:00', end: '08:00', timeZone: 'America/New_York' }, callsFromConnections: true };

  it('quiet hours across midnight, in their own time zone (New York, UTC-5 in January), at their edges', () => {
    assert.equal(quietNow(hours, new Date('2026-01-15T21:59:00Z')), false, '16:59 there');
    assert.equal(quietNow(hours, new Date('2026-01-15T22:00:00Z')), true, '17:00 there');
    assert.equal(quietNow(hours, new Date('2026-01-16T04:30:00Z')), true, '23:30 there');
    assert.equal(quietNow(hours, new Date('2026-01-16T12:59:00Z')), true, '07:59 there, the next morning');
    assert.equal(quietNow(hours, new Date('2026-01-16T13:00:00Z')), false, '08:00 there');
  });

  it('summer time moves them with the clock there (UTC-4 in July)', () => {
    assert.equal(quietNow(hours, new Date('2026-07-15T21:00:00Z')), true, '17:00 there');
    assert.equal(quietNow(hours, new Date('2026-07-15T20:59:00Z')), false, '16:59 there');
  });

  it('hours within a day; none when start and end are the same; do-not-disturb until a time', () => {
    const day = { ...hours, quietHours: { start: '09:00', end: '17:00', timeZone: 'Asia/Tokyo' } };
    assert.equal(quietNow(day, new Date('2026-01-15T00:00:00Z')), true, '09:00 in Tokyo');
    assert.equal(quietNow(day, new Date('2026-01-15T08:00:00Z')), false, '17:00 in Tokyo');
    assert.equal(quietNow({ ...hours, quietHours: { start: '10:00', end: '10:00', timeZone: 'UTC' } }, new Date('2026-01-15T10:00:00Z')), false);
    const until = { ...hours, quietHours: null, doNotDisturbUntil: new Date('2026-01-15T12:00:00Z') };
    assert.equal(quietNow(until, new Date('2026-01-15T11:59:59Z')), true);
    assert.equal(quietNow(until, new Date('2026-01-15T12:00:00Z')), false);
    assert.equal(quietNow(undefined, new Date()), false);
  });

  it('a call rings outside quiet times; within them only from a connection, when allowed', () => {
    const quiet = { ...hours, quietHours: null, doNotDisturbUntil: new Date('2026-01-15T12:00:00Z') };
    const during = new Date('2026-01-15T11:00:00Z');
    assert.equal(callRings(quiet, new Date('2026-01-15T12:00:00Z'), false), true, 'not quiet any more');
    assert.equal(callRings(quiet, during, false), false, 'not a connection');
    assert.equal(callRings(quiet, during, true), true, 'a connection, allowed');
    assert.equal(callRings({ ...quiet, callsFromConnections: false }, during, true), false, 'a connection, not allowed');
    assert.equal(callRings(undefined, during, false), true, 'no settings: rings');
  });

  it('knows IANA time zones and nothing else', () => {
    assert.equal(isTimeZone('Europe/Berlin'), true);
    assert.equal(isTimeZone('Mars/Olympus'), false);
  });
});
