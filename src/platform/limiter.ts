/** Runs the tasks given to it, at most `max` at once, each as soon as a place is free. */
export function limiter(max: number): (task: () => Promise<void>) => Promise<void> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    // A finished task hands its place straight to the next waiting one.
    if (running >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}
