// `npm run docs:config`: writes the README's table of every configuration variable from the schema (dist/, built first).
import { CONFIG_TABLE_MARKERS, configTableMarkdown } from '../dist/src/platform/config.js';
import { writeReadmeTable } from './readme-table.mjs';

writeReadmeTable(CONFIG_TABLE_MARKERS, configTableMarkdown(), 'configuration table');
