/**
 * The named methods of `source`, bound, in an object of their own: how one area hands another a small
 * interface to its repository (what it may read, or the one write it owns the reason for) without
 * handing over the repository, so the other can call nothing else, not even through a cast.
 */
export function narrow<T extends object, const K extends keyof T>(source: T, names: readonly K[]): Pick<T, K> {
  const picked: Partial<Pick<T, K>> = {};
  for (const name of names) {
    const member = source[name];
    if (typeof member !== 'function') throw new TypeError(`${String(name)} is not a method`);
    // Cast: a method of T, bound to its object, is still T[K].
    picked[name] = (member as (...args: unknown[]) => unknown).bind(source) as T[K];
  }
  // Cast: every name was set above.
  return picked as Pick<T, K>;
}
