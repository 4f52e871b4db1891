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
 * `after`: what it set going that went out after it answered (work that is not awaited, such as the
 * author's read mark of a post), counted until neither database has been sent anything for 100 ms;
 * `settle` then writes what lingers to be written with others (the authors' marks), counted too.
 * The app must be quiet besides it (no workers in this process); operations are counted one at a time.
 */
export async function countRoundTrips<T>(client: MongoClient, operation: () => Promise<T>, options: { settle?: () => Promise<void> } = {}): Promise<RoundTrips & { after: RoundTrips; result: T }> {
  const during: RoundTrips = { mongo: [], redis: [] };
  const after: RoundTrips = { mongo: [], redis: [] };
  let trips = during;
  const onMongo = (event: CommandStartedEvent) => {
    if (UPKEEP.has(event.commandName)) return;
    const target: unknown = event.command[event.commandName];
    trips.mongo.push(typeof target === 'string' ? `${event.commandName} ${target}` : event.commandName);
  };
  client.on('commandStarted', onMongo);
  // A MULTI … EXEC block goes out as one write and comes back as one answer: one round trip, named by its commands.
  const transactions = new WeakMap<object, string[]>();
  const untap = tapRedis((client, name) => {
    const open = transactions.get(client);
    if (name === 'multi') transactions.set(client, []);
    else if (open && name === 'exec') {
      transactions.delete(client);
      trips.redis.push(`multi(${open.join(' ')})`);
    } else if (open) open.push(name);
    else if (!UPKEEP.has(name)) trips.redis.push(name);
  });
  try {
    const result = await operation();
    trips = after;
    await quietFor(100, () => after.mongo.length + after.redis.length);
    // Writes that linger for others to join them (authors' read marks) are written now, and counted.
    if (options.settle) {
      await options.settle();
      await quietFor(100, () => after.mongo.length + after.redis.length);
    }
    return { ...during, after, result };
  } finally {
    untap();
    client.off('commandStarted', onMongo);
  }
}

/** Calls `onCommand` for every command any ioredis client of this process sends, until the returned function is called. */
function tapRedis(onCommand: (client: object, name: string) => void): () => void {
  const prototype = Redis.prototype as unknown as { sendCommand: (command: { name: string }, ...rest: unknown[]) => unknown };
  const send = prototype.sendCommand;
  prototype.sendCommand = function (this: object, command, ...rest) {
    onCommand(this, command.name);
    return send.call(this, command, ...rest);
  };
  return () => {
    prototype.sendCommand = send;
  };
}

/**
 * Waits until this process has sent Redis nothing for `ms` (a hub's reads after a connection, say,
 * finish on their own time), so that what one counted operation set going is not counted in the next.
 */
export async function redisQuiet(ms = 100): Promise<void> {
  let sent = 0;
  const untap = tapRedis(() => sent++);
  try {
    await quietFor(ms, () => sent);
  } finally {
    untap();
  }
}

/** Resolves once `count` (of commands sent so far) has not changed for `ms`. */
async function quietFor(ms: number, count: () => number): Promise<void> {
  for (let seen = -1; seen !== count(); ) {
    seen = count();
    await new Promise((resolve) => setTimeout(resolve, ms));
  }
}
