/** Now, injectable: services take a clock so tests can move time instead of sleeping. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** A clock for tests: runs with real time, and jumps when told (forward, or back to issue things in the past). */
export type ShiftableClock = Clock & { advance(ms: number): void };

export function shiftableClock(): ShiftableClock {
  let offset = 0;
  return Object.assign(() => new Date(Date.now() + offset), {
    advance: (ms: number) => {
      offset += ms;
    },
  });
}
