import { Emitter } from '@socket.io/redis-emitter';
import type { Redis } from 'ioredis';

/** Socket.io room names: one per device and one per user (DESIGN.md, "Device socket protocol"). */
export const deviceRoom = (deviceId: string) => `device:${deviceId}`;
export const userRoom = (userId: string) => `user:${userId}`;

/** The key prefix the hubs' Redis adapter and every emitter share. */
export const socketKey = (redisPrefix: string) => `${redisPrefix}socket.io`;

/**
 * Reaches sockets on any hub node from any process (api, worker) through Redis; services use this
 * and never import socket.io.
 */
export class DeviceEvents {
  private readonly emitter: Emitter;

  constructor(redis: Redis, redisPrefix: string) {
    this.emitter = new Emitter(redis, { key: socketKey(redisPrefix) });
  }

  /** Closes every socket of a device, on whatever node holds it. */
  disconnectDevice(deviceId: string): void {
    this.emitter.in(deviceRoom(deviceId)).disconnectSockets(true);
  }
}
