import { uploadStagingDir } from '../platform/storage/upload-staging.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { MembershipReads, RoomReads, RoomsPolicy } from '../rooms/index.js';
import type { EncryptedUploadStore } from '../attachments/index.js';
import { EncryptedUploadsService } from './encrypted-uploads.service.js';
import { E2eeErrors } from './e2ee.errors.js';
import { E2eeRepo } from './e2ee.repo.js';
import { KeyDirectoryService } from './key-directory.service.js';
import { RoomKeysService } from './room-keys.service.js';

/** End-to-end encryption: the key directory (identities, backups, room key shares, key requests) and encrypted uploads (docs/clients/e2ee.md). */
export function e2eeArea(p: Platform, deps: { rooms: RoomReads; members: MembershipReads; roomsPolicy: RoomsPolicy; events: DeviceEvents; attachments: EncryptedUploadStore }) {
  const repo = new E2eeRepo(p.db);
  /** A per-device budget per minute; past it, 429 with Retry-After. */
  const budget = (key: (deviceId: string) => string, perMinute: number) => async (deviceId: string) => {
    const hit = await p.ephemeral.hit(key(deviceId), perMinute, 60);
    if (!hit.allowed) throw E2eeErrors.TOO_MANY_KEY_CALLS({ retryAfter: hit.retryAfter });
  };
  const roomKeys = new RoomKeysService({
    repo,
    rooms: deps.roomsPolicy,
    roomById: (roomId) => deps.rooms.findByIdCached(roomId),
    members: deps.members,
    events: deps.events,
    countKeyCall: budget(p.keys.e2ee.keyCalls, p.config.E2EE_KEY_CALLS_PER_MINUTE),
    clock: p.clock,
  });
  const keyDirectory = new KeyDirectoryService({
    repo,
    storage: () => p.storage,
    stagingDir: uploadStagingDir(p.config),
    onIdentity: (identity) => roomKeys.deviceAdded(identity),
    clock: p.clock,
    logger: p.logger,
  });

  const uploads = new EncryptedUploadsService({
    attachments: deps.attachments,
    rooms: deps.roomsPolicy,
    storage: () => p.storage,
    countUpload: budget(p.keys.e2ee.uploads, p.config.E2EE_UPLOADS_PER_MINUTE),
    maxBytes: p.config.E2EE_ATTACHMENT_MAX_BYTES,
    unusedTtlMs: p.config.E2EE_UNUSED_UPLOAD_TTL * 1000,
    clock: p.clock,
    logger: p.logger,
  });

  // Who may hold a room's key changed: the room's devices are told a rotation is due.
  p.domainEvents.on('room.member-left', ({ roomId }) => roomKeys.rotationDue(roomId, 'MEMBER_LEFT'));
  p.domainEvents.on('device.revoked', ({ deviceId, userId }) => roomKeys.deviceRevoked(deviceId, userId));

  /** A deleted account's end-to-end encryption: its devices' identities and key shares, and its key backup, removed. */
  const forgetUser = async (userId: string, deviceIds: string[]) => {
    await repo.forgetDevices(deviceIds);
    await repo.deleteBackup(userId);
  };
  return { repos: { e2ee: repo }, keyDirectory, roomKeys, uploads, forgetUser };
}
export type E2eeArea = ReturnType<typeof e2eeArea>;

// What other areas use of this one (they import only this file).
export type { EncryptedUploadsService } from './encrypted-uploads.service.js';
