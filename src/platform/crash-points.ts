/**
 * Named places where a chaos test has this process die at once, as a power cut there would. The test
 * names them in CRASH_AT (refused in production); on reaching one the process sends itself SIGKILL:
 * no clean-up, no answer to the request under way, nothing after that line runs. Elsewhere a point
 * costs one function call that does nothing.
 */
export const CRASH_POINTS = [
  /** A payment has just changed (completed or declined) and carries the event it owes; the event's delivery is not recorded yet. */
  'app-payment.changed',
  /** A step of erasing a deleted account is done and recorded; the next has not started. */
  'account.erase-step',
  /** An account deletion is recorded (CLOSING); its wallets are not closed yet. */
  'account.delete-recorded',
  /** An account deletion's wallets are closed; the record does not say so yet, nothing is erased. */
  'account.wallets-closed',
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export type CrashAt = (point: CrashPoint) => void;

export function crashAt(points: readonly string[]): CrashAt {
  if (points.length === 0) return () => undefined;
  const armed = new Set(points);
  return (point) => {
    if (armed.has(point)) process.kill(process.pid, 'SIGKILL');
  };
}
