import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import { parsePublicKey, verifySignature } from '../devices/index.js';
import type { Clock } from '../platform/clock.js';
import type { DeviceEvents } from '../platform/device-events.js';
import { isDuplicateKey } from '../platform/mongo.js';
import type { Principal } from '../platform/principal.js';
import type { MembershipReads } from '../rooms/index.js';
import type { RoomDoc } from '../rooms/index.js';
import type { RoomsPolicy } from '../rooms/index.js';
import { E2eeErrors } from './e2ee.errors.js';
import { keyVersionId, type E2eeRepo, type IdentityDoc, type KeyRequestDoc, type KeyVersionDoc, type StoredShare } from './e2ee.repo.js';
import type { E2eeShareUploadSchema, E2eeSharesDtoSchema } from './e2ee.schemas.js';
import { must } from '../platform/must.js';

export type ShareUpload = z.infer<typeof E2eeShareUploadSchema>;
export type SharesView = z.infer<typeof E2eeSharesDtoSchema>;
type RotationReason = 'MEMBER_LEFT' | 'DEVICE_REVOKED' | 'DEVICE_ADDED';

/** What the uploading device signs for each share (docs/clients/e2ee.md). */
export const shareSigned = (roomId: string, version: number, deviceId: string, wrappedKey: string) => `E2EE_SHARE_V1|${roomId}|${version}|${deviceId}|${wrappedKey}`;

/**
 * Room keys of end-to-end encrypted rooms, which the server never sees: it stores and relays the
 * copies devices wrapped for each other, and decides who may hold them. A device may receive a room's
 * keys when it has registered identity keys, is not signed out, and belongs to an active member; that
 * set is computed at each call, so after a member leaves or a device is signed out, the old set is no
 * longer "every eligible device" and the devices are told a rotation is due.
 */
export class RoomKeysService {
  constructor(
    private readonly deps: {
      repo: E2eeRepo;
      rooms: RoomsPolicy;
      roomById: (roomId: string) => Promise<RoomDoc | null>;
      members: MembershipReads;
      events: DeviceEvents;
      /** Counts one key call of the device; throws 429 TOO_MANY_KEY_CALLS past its budget. */
      countKeyCall: (deviceId: string) => Promise<void>;
      clock: Clock;
    },
  ) {}

  /** The room when the caller is an active member and it is end-to-end encrypted (400 otherwise). */
  async e2eeRoom(principal: Principal, roomId: string): Promise<RoomDoc> {
    const room = await this.deps.rooms.room(roomId);
    await this.deps.rooms.activeMember(roomId, principal.userId);
    if (room.type !== 'E2EE') throw E2eeErrors.ROOM_NOT_E2EE();
    return room;
  }

  /** Devices that may receive the room's keys now, by device id. */
  async eligibleDevices(roomId: string): Promise<Map<string, IdentityDoc>> {
    const identities = await this.deps.repo.eligibleIdentities(await this.deps.members.activeMemberIds(roomId));
    return new Map(identities.map((identity) => [identity._id, identity]));
  }

  async shares(principal: Principal, roomId: string): Promise<SharesView> {
    await this.e2eeRoom(principal, roomId);
    const { repo } = this.deps;
    const versions = await repo.versionsWithShareOf(roomId, principal.deviceId);
    const newest = versions.at(-1);
    const room = await repo.findRoom(roomId);
    const mine = versions.flatMap((v) => {
      const share = v.shares?.[principal.deviceId];
      return share ? [{ version: v.version, wrappedKey: share.wrappedKey, fromDeviceId: share.fromDeviceId, fromSigningKey: share.fromSigningKey, signature: share.signature, createdAt: share.createdAt.toISOString() }] : [];
    });
    return {
      roomId,
      currentVersion: newest?.version ?? 0,
      rotationDue: Boolean(newest && room?.rotationDueAt && room.rotationDueAt > newest.createdAt),
      shares: mine,
    };
  }

  /**
   * Stores wrapped copies of one key version. With `create`: the next version, carrying a share for
   * every eligible device; its single insert decides a race (the loser gets 409). Without: shares for
   * eligible devices that lack one, written in one conditional update (all or none); open key requests
   * of those devices for that version are answered.
   */
  async upload(principal: Principal, roomId: string, input: ShareUpload): Promise<void> {
    await this.deps.countKeyCall(principal.deviceId);
    await this.e2eeRoom(principal, roomId);
    const { repo } = this.deps;
    const eligible = await this.eligibleDevices(roomId);
    const uploader = eligible.get(principal.deviceId);
    if (!uploader) throw E2eeErrors.DEVICE_MAY_NOT_RECEIVE_KEYS();
    const signingKey = must(parsePublicKey(uploader.signingKey, 'ED25519'), 'the uploader\'s registered signing key').key;

    const seen = new Set<string>();
    const now = this.deps.clock();
    const shares: Record<string, StoredShare> = {};
    input.shares.forEach((share, index) => {
      if (seen.has(share.deviceId)) throw E2eeErrors.KEY_SHARE_INVALID({ message: `Two shares for device ${share.deviceId}`, details: [{ index }] });
      seen.add(share.deviceId);
      if (Buffer.from(share.signature, 'base64').length !== 64 || !verifySignature(signingKey, 'ED25519', Buffer.from(shareSigned(roomId, input.version, share.deviceId, share.wrappedKey)), share.signature)) {
        throw E2eeErrors.KEY_SHARE_INVALID({ details: [{ index, deviceId: share.deviceId }] });
      }
      if (!eligible.has(share.deviceId)) throw E2eeErrors.KEY_SHARE_RECIPIENT_INVALID({ details: [{ index, deviceId: share.deviceId }] });
      shares[share.deviceId] = { wrappedKey: share.wrappedKey, signature: share.signature, fromDeviceId: principal.deviceId, fromSigningKey: uploader.signingKey, createdAt: now };
    });

    const current = await repo.current(roomId);
    if (input.create) {
      if (input.version === current.version) throw E2eeErrors.KEY_VERSION_TAKEN();
      if (input.version !== current.version + 1) throw E2eeErrors.KEY_VERSION_INVALID({ message: `The next key version is ${current.version + 1}` });
      const missing = [...eligible.keys()].filter((deviceId) => !seen.has(deviceId));
      if (missing.length > 0) throw E2eeErrors.KEY_SHARES_INCOMPLETE({ details: missing.map((deviceId) => ({ deviceId })) });
      const doc: KeyVersionDoc = { _id: keyVersionId(roomId, input.version), roomId, version: input.version, createdByDeviceId: principal.deviceId, createdAt: now, shares };
      try {
        await repo.insertVersion(doc);
      } catch (error) {
        if (isDuplicateKey(error)) throw E2eeErrors.KEY_VERSION_TAKEN();
        throw error;
      }
      return;
    }

    if (input.version < 1 || input.version > current.version) throw E2eeErrors.KEY_VERSION_INVALID({ message: `Key versions of this room are 1 to ${current.version}` });
    const id = keyVersionId(roomId, input.version);
    const devices = Object.keys(shares);
    if (!(await repo.addShares(id, shares))) {
      const taken = await repo.devicesWithShares(id, devices);
      throw E2eeErrors.KEY_SHARE_EXISTS({ details: taken.map((deviceId) => ({ deviceId })) });
    }
    await this.answerRequests(roomId, input.version, devices);
  }

  /**
   * A device asks for a key version it lacks: recorded (one open request per device and version) and
   * sent to every other eligible device of the room's active members, through their inboxes, so a
   * device offline now gets it when it connects, unless it was answered by then.
   */
  async request(principal: Principal, roomId: string, version: number): Promise<void> {
    await this.deps.countKeyCall(principal.deviceId);
    await this.e2eeRoom(principal, roomId);
    const { repo, events } = this.deps;
    const eligible = await this.eligibleDevices(roomId);
    if (!eligible.has(principal.deviceId)) throw E2eeErrors.DEVICE_MAY_NOT_RECEIVE_KEYS();
    const current = await repo.current(roomId);
    if (version > current.version) throw E2eeErrors.KEY_VERSION_INVALID({ message: `Key versions of this room are 1 to ${current.version}` });

    const request: KeyRequestDoc = {
      _id: randomUUID(),
      roomId,
      version,
      deviceId: principal.deviceId,
      userId: principal.userId,
      openKey: `${roomId}:${version}:${principal.deviceId}`,
      status: 'OPEN',
      deliveries: [],
      createdAt: this.deps.clock(),
      answeredAt: null,
    };
    try {
      await repo.insertRequest(request);
    } catch (error) {
      // Already asked and not yet answered: the devices have it.
      if (isDuplicateKey(error)) return;
      throw error;
    }
    const data = { roomId, version, requestId: request._id, deviceId: principal.deviceId };
    const targets = [...eligible.keys()].filter((deviceId) => deviceId !== principal.deviceId);
    const deliveries = await Promise.all(targets.map(async (deviceId) => ({ deviceId, seq: await events.toDevice(deviceId, 'e2ee.key-requested', data) })));
    // Answered while it was being sent: take it back out of the inboxes now.
    if (!(await repo.recordDeliveries(request._id, deliveries))) await this.withdraw({ ...request, deliveries });
  }

  /** Marks the open requests of these devices for the version answered, and replaces them in the inboxes that still hold them. */
  private async answerRequests(roomId: string, version: number, deviceIds: string[]): Promise<void> {
    const { repo } = this.deps;
    for (const deviceId of deviceIds) {
      const answered = await repo.answerRequest(`${roomId}:${version}:${deviceId}`, this.deps.clock());
      if (answered) await this.withdraw(answered);
    }
  }

  private async withdraw(request: KeyRequestDoc): Promise<void> {
    const answered = { roomId: request.roomId, version: request.version, requestId: request._id };
    await Promise.all(request.deliveries.map(({ deviceId, seq }) => this.deps.events.supersede(deviceId, seq, 'e2ee.key-request-answered', answered)));
  }

  /** The set of devices that may hold the room's key changed: remembered, and the room's devices told. */
  async rotationDue(roomId: string, reason: RotationReason): Promise<void> {
    const room = await this.deps.roomById(roomId);
    if (room?.type !== 'E2EE') return;
    await this.markRotationDue(roomId, reason, [...(await this.eligibleDevices(roomId)).keys()]);
  }

  /** Remembers that a rotation is due and tells the room's eligible devices (already read by the caller). */
  private async markRotationDue(roomId: string, reason: RotationReason, devices: string[]): Promise<void> {
    await this.deps.repo.markRotationDue(roomId, reason, this.deps.clock());
    await Promise.all(devices.map((deviceId) => this.deps.events.toDevice(deviceId, 'e2ee.rotation-due', { roomId, reason })));
  }

  /** A device registered its identity: the devices of each end-to-end encrypted room of its user hear of it. */
  async deviceAdded(identity: IdentityDoc): Promise<void> {
    for (const roomId of await this.deps.members.activeRoomIds(identity.userId)) {
      const room = await this.deps.roomById(roomId);
      if (room?.type !== 'E2EE') continue;
      // One read of the eligible devices serves both notices (the new device is among them: it hears of the rotation).
      const eligible = [...(await this.eligibleDevices(roomId)).keys()];
      const data = { roomId, userId: identity.userId, deviceId: identity._id, encryptionKey: identity.encryptionKey, signingKey: identity.signingKey };
      await Promise.all(eligible.filter((deviceId) => deviceId !== identity._id).map((deviceId) => this.deps.events.toDevice(deviceId, 'e2ee.device-added', data)));
      await this.markRotationDue(roomId, 'DEVICE_ADDED', eligible);
    }
  }

  /** A device was signed out: it may no longer receive keys, and its user's encrypted rooms are due a rotation. */
  async deviceRevoked(deviceId: string, userId: string): Promise<void> {
    if (!(await this.deps.repo.revokeIdentity(deviceId))) return;
    for (const roomId of await this.deps.members.activeRoomIds(userId)) await this.rotationDue(roomId, 'DEVICE_REVOKED');
  }
}
