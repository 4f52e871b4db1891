import { MongoClient, type Collection, type Db, type Document, type Filter } from 'mongodb';
import { propertyOf } from './errors.js';

/**
 * Connects with waits bounded by `timeoutMs`: the driver checks the server every `probeMs`, a check
 * gives up after half the bound and so does choosing a server, so an operation under way when the
 * server stops answering fails within about `probeMs` + `timeoutMs` (docs/operators/runbooks.md).
 */
export async function connectMongo(url: string, dbName: string, bounds: { timeoutMs: number; probeMs: number; monitorCommands?: boolean }): Promise<{ client: MongoClient; db: Db }> {
  const half = Math.max(100, Math.floor(bounds.timeoutMs / 2));
  // monitorCommands: the driver's command events (tests count each operation's commands with them).
  const client = new MongoClient(url, { serverSelectionTimeoutMS: half, connectTimeoutMS: half, heartbeatFrequencyMS: Math.max(500, bounds.probeMs), monitorCommands: bounds.monitorCommands ?? false });
  await client.connect();
  return { client, db: client.db(dbName) };
}

/** True when `error` is a unique-index violation. */
export function isDuplicateKey(error: unknown): boolean {
  return propertyOf(error, 'code') === 11000;
}

/** How many ids one `$in` lookup takes: mongo-java-server matches `$in` in time growing with the square of the list (1,000 ids: 92 ms; 10 lists of 100: 4 ms each). */
const IN_CHUNK = 100;

/** Documents by `_id`, in lookups of at most 100 ids run side by side; order not kept. */
export async function findByIds<T extends { _id: string }>(collection: Collection<T>, ids: readonly string[], projection?: Document): Promise<T[]> {
  const chunks: string[][] = [];
  for (let start = 0; start < ids.length; start += IN_CHUNK) chunks.push(ids.slice(start, start + IN_CHUNK));
  // Cast: T has a string _id (the constraint); the driver cannot narrow its filter type from it.
  const found = await Promise.all(chunks.map((chunk) => collection.find({ _id: { $in: chunk } } as Filter<T>, projection ? { projection } : {}).toArray()));
  // Cast: the driver types found documents as WithId<T>, which T already is.
  return found.flat() as T[];
}
