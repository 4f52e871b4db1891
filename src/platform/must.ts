/**
 * A value the code has reason to know is there (a document just written or claimed, a capture group
 * of a pattern that matched, an input a schema required): returned, or an Error naming what was
 * missing. Used instead of a non-null assertion, so a broken invariant fails where it breaks, by name.
 */
export function must<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new Error(`${what} is missing`);
  return value;
}
