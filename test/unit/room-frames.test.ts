import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Decoder, Encoder, PacketType } from 'socket.io-parser';
import { frameOf, roomChannel, roomOfChannel } from '../../src/platform/sharded-emitter.js';

/** What socket.io's own encoder makes of the event, as the Engine.IO message a WebSocket frame carries. */
const socketIoFrame = (event: string, args: unknown[]) => {
  const [packet, ...more] = new Encoder().encode({ type: PacketType.EVENT, nsp: '/', data: [event, ...args] });
  assert.equal(more.length, 0, 'no binary attachments');
  return `4${String(packet)}`;
};

describe('room broadcasts encoded once by their sender (issue 55)', () => {
  it('the frame is the one socket.io encodes for the same event, and decodes to it', async () => {
    const cases: [string, unknown[]][] = [
      ['message.new', [{ roomId: 'r1', messageId: 'm1', message: 'hello' }]],
      ['message.new', [{ roomId: 'r1', message: 'two ✓ "quoted" \\ é \u2028 😀', mentions: [], replyTo: null, at: new Date(0) }]],
      ['room.read', [{ roomId: 'r1', userId: 'u1', messageId: 'm1', at: '2026-11-28T00:00:00.000Z' }]],
      ['typing.start', [{ roomId: 'r1', userId: 'u1' }, 2, 'three']],
    ];
    for (const [event, args] of cases) {
      const frame = frameOf(event, args);
      assert.equal(frame, socketIoFrame(event, args));
      const decoded = new Promise<unknown>((resolve) => {
        const decoder = new Decoder();
        decoder.on('decoded', (packet: { data?: unknown }) => resolve(packet.data));
        decoder.add(frame.slice(1));
      });
      assert.deepEqual(await decoded, JSON.parse(JSON.stringify([event, ...args])));
    }
  });

  it('a hub finds the room in the channel name alone; other channels of the adapter are not a room', () => {
    const prefix = 't:abc:socket.io';
    assert.equal(roomOfChannel(prefix, roomChannel(prefix, 'room:r1')), 'room:r1');
    assert.equal(roomOfChannel(prefix, roomChannel(prefix, 'room:with#hash')), 'room:with#hash');
    assert.equal(roomOfChannel(prefix, `${prefix}#/#`), null, 'the namespace\'s channel');
    assert.equal(roomOfChannel(prefix, `other#/#room:r1#`), null, 'another prefix');
  });
});
