/**
 * Named places where a chaos test has this process die at once, as a power cut there would. The test
 * names them in CRASH_AT (refused in production); on reaching one the process sends itself SIGKILL:
 * no clean-up, no answer to the request under way, nothing after that line runs. Elsewhere a point
 * costs one function call that does nothing.
 */
export type CrashPoint =
  /** A payment has just changed (completed or declined) and carries the event it owes; the event's delivery is not recorded yet. */
  | 'app-payment.changed'
  /** A step of erasing a deleted account is done and recorded; the next has not started. */
  | 'account.erase-step';

export type CrashAt = (point: CrashPoint) => void;

export function crashAt(points: readonly string[]): CrashAt {
  if (points.length === 0) return () => undefined;
  const armed = new Set(points);
  return (point) => {
    if (armed.has(point)) process.kill(process.pid, 'SIGKILL');
  };
}
