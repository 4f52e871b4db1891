/**
 * Hands work the answer does not wait for (a post's read mark for its author, say) to run once the
 * answer is sent: an HTTP route hands its own (rest/after-answer.ts); elsewhere, on the event loop's
 * next turn. The work must catch its own errors.
 */
export type AfterAnswer = (task: () => void) => void;

/** Without an HTTP answer to wait for: the event loop's next turn, after what this turn set going. */
export const nextTurn: AfterAnswer = (task) => {
  setImmediate(task);
};
