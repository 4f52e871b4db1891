/**
 * Where the library keeps what must outlive the app's process: the session's tokens, the last inbox
 * sequence the app handled, and the messages waiting to be sent. Give one per platform:
 * {@link memoryStore} (tests, bots), {@link indexedDbStore} (browsers), {@link storageStore} over
 * React Native's AsyncStorage (or a browser's localStorage). A store holds tokens: on a phone, prefer
 * one backed by the keychain or keystore for the `session` key.
 */
export interface KeyValueStore {
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

/** Kept in memory only: gone with the process. */
export function memoryStore(): KeyValueStore {
  const values = new Map<string, string>();
  return {
    get: async (key) => values.get(key) ?? null,
    set: async (key, value) => void values.set(key, value),
    delete: async (key) => void values.delete(key),
  };
}

/** What React Native's AsyncStorage and a browser's localStorage both offer. */
export interface StorageLike {
  getItem(key: string): string | null | Promise<string | null>;
  setItem(key: string, value: string): void | Promise<void>;
  removeItem(key: string): void | Promise<void>;
}

/** Over AsyncStorage (`storageStore(AsyncStorage)`) or localStorage, every key under `prefix`. */
export function storageStore(storage: StorageLike, prefix = 'chat-platform:'): KeyValueStore {
  return {
    get: async (key) => (await storage.getItem(prefix + key)) ?? null,
    set: async (key, value) => void (await storage.setItem(prefix + key, value)),
    delete: async (key) => void (await storage.removeItem(prefix + key)),
  };
}

/** In a browser's IndexedDB: one database `name` with one object store of strings. */
export function indexedDbStore(name = 'chat-platform'): KeyValueStore {
  const STORE = 'values';
  let opened: Promise<IDBDatabase> | null = null;
  const database = () =>
    (opened ??= new Promise<IDBDatabase>((resolve, reject) => {
      const request = indexedDB.open(name, 1);
      request.onupgradeneeded = () => request.result.createObjectStore(STORE);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error ?? new Error('IndexedDB did not open'));
    }));
  const run = async <T>(mode: IDBTransactionMode, act: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> => {
    const db = await database();
    return new Promise<T>((resolve, reject) => {
      const transaction = db.transaction(STORE, mode);
      const request = act(transaction.objectStore(STORE));
      transaction.oncomplete = () => resolve(request.result);
      transaction.onerror = () => reject(transaction.error ?? new Error('IndexedDB transaction failed'));
      transaction.onabort = () => reject(transaction.error ?? new Error('IndexedDB transaction aborted'));
    });
  };
  return {
    get: async (key) => {
      const value: unknown = await run('readonly', (store) => store.get(key));
      return typeof value === 'string' ? value : null;
    },
    set: async (key, value) => void (await run('readwrite', (store) => store.put(value, key))),
    delete: async (key) => void (await run('readwrite', (store) => store.delete(key))),
  };
}
