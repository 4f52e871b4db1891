// `npm run docs:errors`: writes the README's error table from the error catalogue (dist/, built first).
import { ERROR_TABLE_MARKERS, errorTableMarkdown } from '../dist/src/error-catalogue.js';
import { writeReadmeTable } from './readme-table.mjs';

writeReadmeTable(ERROR_TABLE_MARKERS, errorTableMarkdown(), 'error table');
