/**
 * What the service keeps about people, as each area declares it (`src/<area>/personal-data.ts`):
 * collection by collection and Redis key family by family, what personal data is there, what
 * erasing an account does to it, what the data export takes. `docs/reference/personal-data.md` is
 * made from the declarations (npm run docs:tables); a test fails when a collection the code names is
 * not declared, and the erasure test walks them.
 */
export interface PersonalData {
  /** The area that owns it (its folder under src/). */
  area: string;
  /** A MongoDB collection, or a family of Redis keys (by the keyspace's names). */
  collection?: string;
  redisKeys?: string;
  /** What about people it holds. */
  holds: string;
  /** What erasing an account does to it. */
  erasure: string;
  /** What the user's data export takes from it ("—": nothing). */
  exported: string;
  /** Why a deleted person's id stays after erasure (a tombstone others' data points at, books that must balance); absent: nothing of theirs stays. */
  keepsId?: string;
}

export const PERSONAL_DATA_TABLE_MARKERS = { start: '<!-- personal-data-table:start (npm run docs:tables writes it) -->', end: '<!-- personal-data-table:end -->' } as const;

/** The reference page's table: every declaration, collections first, by area. */
export function personalDataTableMarkdown(entries: readonly PersonalData[]): string {
  const cell = (text: string) => text.replaceAll('|', '\\|');
  const sorted = [...entries].sort((a, b) => Number(Boolean(a.redisKeys)) - Number(Boolean(b.redisKeys)) || a.area.localeCompare(b.area) || (a.collection ?? a.redisKeys ?? '').localeCompare(b.collection ?? b.redisKeys ?? ''));
  return [
    '| where | area | holds | erasing an account | the export | the id stays because |',
    '|---|---|---|---|---|---|',
    ...sorted.map((entry) => `| ${entry.collection ? `\`${entry.collection}\`` : `Redis: ${cell(entry.redisKeys ?? '')}`} | ${entry.area} | ${cell(entry.holds)} | ${cell(entry.erasure)} | ${cell(entry.exported)} | ${cell(entry.keepsId ?? '—')} |`),
  ].join('\n');
}
