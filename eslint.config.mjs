import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';
import { readdirSync } from 'node:fs';

/** The areas: every folder of src/ but the platform they all build on. */
const areas = readdirSync(new URL('./src/', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && entry.name !== 'platform')
  .map((entry) => entry.name);

/** A collection is opened in exactly one repo file: services ask its named methods (ARCHITECTURE.md). */
const collectionRules = [
  { selector: "CallExpression[callee.property.name='collection']", message: 'Open collections only in an <area>.repo.ts, behind named methods.' },
  { selector: "TSTypeReference[typeName.name='Collection']", message: 'Services hold no Collection: ask the area\'s repo.' },
];

/**
 * No repository crosses an area in the wiring: an area hands another the small interface its factory
 * returns (`reads`, `membershipReads`, `signIn`, ...: src/platform/narrow.ts), never its `repos`.
 */
const repositoryRules = [
  { selector: "MemberExpression[object.type='MemberExpression'][object.property.name='repos']", message: 'Another area\'s repository: hand over the small interface its factory returns instead.' },
  { selector: "MemberExpression[property.name='repos'][object.type='MemberExpression'][object.object.name='deps']", message: 'Another area\'s repositories: take the small interface its factory returns instead.' },
  { selector: "TSTypeReference[typeName.name='Pick'] TSLiteralType > Literal[value='repos']", message: 'Another area\'s repositories: take the small interface its factory returns instead.' },
];

export default tseslint.config(
  // The client library's generated types (npm run client:types) are checked against the documents, not linted.
  { ignores: ['**/dist/**', 'node_modules/**', '.data/**', 'packages/client/src/generated/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    // The domain never reaches into its adapters (README, "Layout").
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['**/rest/**', '**/realtime/**', '**/workers/**'] }],
    },
  },
  {
    // A collection is opened in exactly one repo file: services ask its named methods (ARCHITECTURE.md).
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.repo.ts', 'src/platform/mongo.ts'],
    rules: {
      'no-restricted-syntax': ['error', ...collectionRules],
    },
  },
  {
    // The wiring: the composition root and each area's factory.
    files: ['src/composition.ts', 'src/*/index.ts'],
    rules: {
      'no-restricted-syntax': ['error', ...collectionRules, ...repositoryRules],
    },
  },
  // An area meets another only through that area's index.ts (its services, policies, small read
  // interfaces and the types they use), its error codes and its schemas; never its repos or internals.
  ...areas.map((area) => ({
    files: [`src/${area}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/rest/**', '**/realtime/**', '**/workers/**'] },
            {
              regex: `^(\\.\\./)+(${areas.filter((other) => other !== area).join('|')})/(?!index\\.js$)(?![\\w./-]*\\.(schemas|errors)\\.js$)`,
              message: `Import another area through its index.ts (or its *.errors.js / *.schemas.js), not its internals.`,
            },
            {
              regex: `^(\\.\\./)+(${areas.filter((other) => other !== area).join('|')})/index\\.js$`,
              importNamePattern: 'Repo$',
              message: `Another area's repository: take the small interface its factory returns (its reads) instead.`,
            },
          ],
        },
      ],
    },
  })),
  {
    // The platform is what every area builds on: it imports none of them (the composition hands it what it needs).
    files: ['src/platform/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/rest/**', '**/realtime/**', '**/workers/**'] }, { regex: `^(\\.\\./)+(${areas.join('|')})/`, message: 'The platform imports no area.' }] },
      ],
    },
  },
  {
    files: ['scripts/**/*.mjs', 'bench/**/*.mjs', 'examples/**/*.mjs', 'eslint.config.mjs'],
    languageOptions: { globals: globals.node },
  },
  {
    // The browser examples' page scripts (bundled for the page by their serve.mjs).
    files: ['examples/**/*.js'],
    languageOptions: { globals: globals.browser },
  },
);
