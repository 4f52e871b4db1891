/** Lower-cased words of a name (NFKC, letters and digits), each once: what name search matches on (no `$text`: docs/contributors/decisions.md). */
export function wordsOf(name: string | null): string[] {
  if (!name) return [];
  return [...new Set(name.normalize('NFKC').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean))];
}
