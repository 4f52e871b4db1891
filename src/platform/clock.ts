/** Now, injectable: services take a clock so tests can move time instead of sleeping. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** A clock for tests: starts at `start` and moves only when told. */
export function manualClock(start = new Date()): Clock & { advance(ms: number): void; set(at: Date): void } {
  let now = start.getTime();
  const clock = () => new Date(now);
  return Object.assign(clock, {
    advance: (ms: number) => {
      now += ms;
    },
    set: (at: Date) => {
      now = at.getTime();
    },
  });
}
