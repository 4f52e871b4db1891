import { Redis } from 'ioredis';
import type { CommandStartedEvent, MongoClient } from 'mongodb';

/** What one operation sent: its MongoDB commands (`find messages`) and its Redis round trips (`publish`; a transaction `multi(incr expire)`), in order. */
export interface RoundTrips {
  mongo: string[];
  redis: string[];
}

/** Commands that are the connection's upkeep, not the operation's: health probes and handshakes. */
const UPKEEP = new Set(['ping', 'hello', 'ismaster', 'isMaster', 'endSessions', 'info', 'client', 'select', 'subscribe', 'psubscribe']);

/**
 * Counts the round trips `operation` makes: MongoDB commands through the driver's command monitoring
 * (the test app's client is made with `monitorCommands`),
 * Redis commands of every ioredis client of this process (the app's, the queues', the socket adapter's).
 * The app must be quiet besides it (no workers in this process); operations are counted one at a time.
 */
export async function countRoundTrips<T>(client: MongoClient, operation: () => Promise<T>): Promise<RoundTrips & { result: T }> {
  const trips: RoundTrips = { mongo: [], redis: [] };
  const onMongo = (event: CommandStartedEvent) => {
    if (UPKEEP.has(event.commandName)) return;
    const target: unknown = event.command[event.commandName];
    trips.mongo.push(typeof target === 'string' ? `${event.commandName} ${target}` : event.commandName);
  };
  client.on('commandStarted', onMongo);
  const prototype = Redis.prototype as unknown as { sendCommand: (command: { name: string; args: unknown[] }, ...rest: unknown[]) => unknown };
  const send = prototype.sendCommand;
  // A MULTI … EXEC block goes out as one write and comes back as one answer: one round trip, named by its commands.
  const transactions = new WeakMap<object, string[]>();
  prototype.sendCommand = function (this: object, command, ...rest) {
    const open = transactions.get(this);
    if (command.name === 'multi') transactions.set(this, []);
    else if (open && command.name === 'exec') {
      transactions.delete(this);
      trips.redis.push(`multi(${open.join(' ')})`);
    } else if (open) open.push(command.name);
    else if (!UPKEEP.has(command.name)) trips.redis.push(command.name);
    return send.call(this, command, ...rest);
  };
  try {
    const result = await operation();
    return { ...trips, result };
  } finally {
    prototype.sendCommand = send;
    client.off('commandStarted', onMongo);
  }
}

/**
 * Waits until this process has sent Redis nothing for `ms` (a hub's reads after a connection, say,
 * finish on their own time), so that what one counted operation set going is not counted in the next.
 */
export async function redisQuiet(ms = 100): Promise<void> {
  const prototype = Redis.prototype as unknown as { sendCommand: (...args: unknown[]) => unknown };
  const send = prototype.sendCommand;
  let sent = 0;
  prototype.sendCommand = function (this: object, ...args: unknown[]) {
    sent++;
    return send.apply(this, args);
  };
  try {
    for (let seen = -1; seen !== sent; ) {
      seen = sent;
      await new Promise((resolve) => setTimeout(resolve, ms));
    }
  } finally {
    prototype.sendCommand = send;
  }
}
