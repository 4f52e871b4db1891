import type { Collection, Db } from 'mongodb';
import { must } from '../platform/must.js';

/** How far a watcher has read the chain (`chain_cursors`; `_id` 'deposits'). */
interface CursorDoc {
  _id: string;
  nextBlock: number;
}

export class ChainCursorsRepo {
  private readonly cursors: Collection<CursorDoc>;

  constructor(db: Db) {
    this.cursors = db.collection<CursorDoc>('chain_cursors');
  }

  /** The next block the named watcher reads, set to `head` the first time (blocks before it are not read). */
  async nextBlock(name: string, head: number): Promise<number> {
    const cursor = await this.cursors.findOne({ _id: name });
    if (cursor) return cursor.nextBlock;
    await this.cursors.updateOne({ _id: name }, { $setOnInsert: { nextBlock: head } }, { upsert: true });
    return must(await this.cursors.findOne({ _id: name }), 'the cursor just written').nextBlock;
  }

  /** Moves the watcher on to `to`, unless another run moved it from `from` first. */
  async advance(name: string, from: number, to: number): Promise<void> {
    await this.cursors.updateOne({ _id: name, nextBlock: from }, { $set: { nextBlock: to } });
  }
}
