import type { Collection, Db } from 'mongodb';

/** A form under way (dynamic flows): which view the next answers must come from, and how many steps were taken. */
export interface InvocationDoc {
  _id: string;
  appId: string;
  userId: string;
  roomId: string | null;
  command: string | null;
  flow: string | null;
  payload: Record<string, unknown> | null;
  manifestVersion: string;
  steps: number;
  expectedView: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Forms under way (`app_invocations`): one document per dynamic flow, moved on by each step. */
export class InvocationsRepo {
  private readonly invocations: Collection<InvocationDoc>;

  constructor(db: Db) {
    this.invocations = db.collection<InvocationDoc>('app_invocations');
  }

  /** The member's form under way with the app. */
  findOfMember(invocationId: string, appId: string, userId: string): Promise<InvocationDoc | null> {
    return this.invocations.findOne({ _id: invocationId, appId, userId });
  }

  async insert(doc: InvocationDoc): Promise<void> {
    await this.invocations.insertOne(doc);
  }

  /** Removes forms not moved on since `before`; how many. */
  async deleteUntouchedSince(before: Date): Promise<number> {
    return (await this.invocations.deleteMany({ updatedAt: { $lt: before } })).deletedCount;
  }

  /** One more step taken; the view the next answers must come from (null: the form ended). */
  async step(invocationId: string, expectedView: string | null, at: Date): Promise<void> {
    await this.invocations.updateOne({ _id: invocationId }, { $inc: { steps: 1 }, $set: { expectedView, updatedAt: at } });
  }
}
