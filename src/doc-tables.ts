/**
 * The generated tables of the docs: each is made from the code it describes, written between its two
 * markers by `npm run docs:tables`, and a test fails when a page's table and the code disagree.
 */
import { ERROR_TABLE_MARKERS, errorTableMarkdown } from './error-catalogue.js';
import { CONFIG_TABLE_MARKERS, configTableMarkdown } from './platform/config.js';
import { EVENT_TABLE_MARKERS, ROOM_EVENT_TABLE_MARKERS, deviceEventTableMarkdown, roomEventTableMarkdown } from './socket-protocol.js';
import { PERSONAL_DATA_TABLE_MARKERS, personalDataTableMarkdown } from './platform/personal-data.js';
import { PERSONAL_DATA } from './personal-data.js';
import { SHARD_COMMANDS_MARKERS, SHARD_TABLE_MARKERS, shardCommands, shardKeyTableMarkdown } from './platform/shard-keys.js';

export interface GeneratedTable {
  /** The page, from the repository's root. */
  file: string;
  what: string;
  markers: { start: string; end: string };
  markdown: () => string;
}

export const GENERATED_TABLES: readonly GeneratedTable[] = [
  { file: 'docs/reference/errors.md', what: 'error table', markers: ERROR_TABLE_MARKERS, markdown: errorTableMarkdown },
  { file: 'docs/operators/configuration.md', what: 'configuration table', markers: CONFIG_TABLE_MARKERS, markdown: () => configTableMarkdown().trim() },
  { file: 'docs/clients/socket-protocol.md', what: 'device event table', markers: EVENT_TABLE_MARKERS, markdown: deviceEventTableMarkdown },
  { file: 'docs/clients/socket-protocol.md', what: 'room broadcast table', markers: ROOM_EVENT_TABLE_MARKERS, markdown: roomEventTableMarkdown },
  { file: 'docs/operators/scaling.md', what: 'shard key table', markers: SHARD_TABLE_MARKERS, markdown: shardKeyTableMarkdown },
  { file: 'docs/reference/personal-data.md', what: 'personal data table', markers: PERSONAL_DATA_TABLE_MARKERS, markdown: () => personalDataTableMarkdown(PERSONAL_DATA) },
  { file: 'deploy/mongo-shard-init.js', what: 'shard commands', markers: SHARD_COMMANDS_MARKERS, markdown: shardCommands },
];

/** The page's text with its table made anew (throws when the page has no markers). */
export function withTable(text: string, table: GeneratedTable): string {
  const start = text.indexOf(table.markers.start);
  const end = text.indexOf(table.markers.end);
  if (start < 0 || end < start) throw new Error(`${table.file} has no ${table.what} markers`);
  return `${text.slice(0, start + table.markers.start.length)}\n${table.markdown()}\n${text.slice(end)}`;
}
