/**
 * Resolves once `check` holds (polled every 25 ms), rejects naming `what` after `ms`: what tests wait
 * on instead of a fixed sleep, so a slow machine only makes them slower, never wrong.
 */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
