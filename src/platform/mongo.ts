import { MongoClient, type Db } from 'mongodb';

export async function connectMongo(url: string, dbName: string): Promise<{ client: MongoClient; db: Db }> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000, connectTimeoutMS: 5_000 });
  await client.connect();
  return { client, db: client.db(dbName) };
}

/** True when `error` is a unique-index violation. */
export function isDuplicateKey(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 11000;
}
