import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bulkOf, GroupWriter, readsOf, type Waiter } from '../../src/platform/group-writer.js';

/** A write that records each group it gets and answers each item with its double, after `gate` opens. */
function recording() {
  const groups: number[][] = [];
  let open: () => void = () => undefined;
  let gate = Promise.resolve();
  const writer = new GroupWriter<number, number>(async (group: Waiter<number, number>[]) => {
    groups.push(group.map(({ item }) => item));
    await gate;
    for (const waiter of group) waiter.resolve(waiter.item * 2);
  }, 3);
  return {
    writer,
    groups,
    hold: () => {
      gate = new Promise((resolve) => (open = resolve));
    },
    release: () => open(),
  };
}

describe('GroupWriter (group commit)', () => {
  it('writes what is added in one turn as one group, and alone an item goes at once', async () => {
    const { writer, groups } = recording();
    assert.deepEqual(await Promise.all([writer.add(1), writer.add(2)]), [2, 4]);
    assert.deepEqual(await writer.add(5), 10);
    assert.deepEqual(groups, [[1, 2], [5]]);
    assert.deepEqual(writer.written, { groups: 2, items: 3 });
  });

  it('gathers what is added while a group is written into the next, at most `limit` a group, in order', async () => {
    const { writer, groups, hold, release } = recording();
    hold();
    const first = writer.add(1);
    await new Promise((resolve) => setImmediate(resolve));
    const later = writer.addAll([2, 3, 4, 5]);
    const last = writer.add(6);
    release();
    assert.deepEqual(await Promise.all([first, ...later, last]), [2, 4, 6, 8, 10, 12]);
    assert.deepEqual(groups, [[1], [2, 3, 4], [5, 6]]);
  });

  it('with a linger, what is added within it goes as one group; flush writes what waits at once', async () => {
    const groups: number[][] = [];
    const writer = new GroupWriter<number, void>(async (group) => {
      groups.push(group.map(({ item }) => item));
      for (const waiter of group) waiter.resolve();
    }, 64, 50);
    const early = writer.add(1);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const later = writer.add(2);
    assert.deepEqual(groups, [], 'nothing written before the linger ends');
    await Promise.all([early, later]);
    assert.deepEqual(groups, [[1, 2]]);
    const waiting = writer.add(3);
    await writer.flush();
    assert.deepEqual(groups, [[1, 2], [3]], 'flushed without waiting for the linger');
    await waiting;
    await writer.flush();
    assert.deepEqual(writer.written, { groups: 2, items: 3 });
  });

  it('an item added as the last group ends is written too (never left waiting)', async () => {
    const groups: number[][] = [];
    const writer = new GroupWriter<number, void>(async (group) => {
      groups.push(group.map(({ item }) => item));
      for (const waiter of group) waiter.resolve();
    });
    // Added from the first write's answer: after its group, before the drain has ended.
    const second = writer.add(1).then(() => writer.add(2));
    await second;
    assert.deepEqual(groups, [[1], [2]]);
  });

  it('gives a failed write\'s error to every item it did not answer, and goes on with the next group', async () => {
    const writer = new GroupWriter<number, number>(async (group) => {
      group[0]?.resolve(0);
      if (group.length > 1) throw new Error('the database went away');
    });
    const outcomes = await Promise.allSettled(writer.addAll([1, 2, 3]));
    assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'rejected']);
    assert.equal(await writer.add(4), 0);
  });

  it('bulkOf answers each item with its own write error, or all with the error of a write that failed whole', async () => {
    const duplicate = { index: 1, code: 11000 };
    const partly = new GroupWriter<string, void>(bulkOf(async () => Promise.reject(Object.assign(new Error('bulk'), { writeErrors: [duplicate] }))));
    const outcomes = await Promise.allSettled(partly.addAll(['a', 'b', 'c']));
    assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.equal((outcomes[1] as PromiseRejectedResult).reason, duplicate);
    const whole = new GroupWriter<string, void>(bulkOf(async () => Promise.reject(new Error('no connection'))));
    assert.deepEqual((await Promise.allSettled(whole.addAll(['a', 'b']))).map((o) => o.status), ['rejected', 'rejected']);
  });

  it('readsOf reads once for the whole group and answers each question with the documents it matches', async () => {
    const reads: number[][][] = [];
    const docs = [1, 2, 3, 4, 5, 6].map((n) => ({ n }));
    const reader = new GroupWriter<number[], { n: number }[]>(
      readsOf(
        async (questions: number[][]) => {
          reads.push(questions);
          return docs.filter(({ n }) => questions.some((q) => q.includes(n)));
        },
        (doc, question) => question.includes(doc.n),
      ),
    );
    const answers = await Promise.all(reader.addAll([[1, 2], [2, 5], [9]]));
    assert.deepEqual(answers, [[{ n: 1 }, { n: 2 }], [{ n: 2 }, { n: 5 }], []]);
    assert.equal(reads.length, 1);
    const failing = new GroupWriter<number[], { n: number }[]>(readsOf(async () => Promise.reject(new Error('no connection')), () => true));
    assert.deepEqual((await Promise.allSettled(failing.addAll([[1], [2]]))).map((o) => o.status), ['rejected', 'rejected']);
  });
});
