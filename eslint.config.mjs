import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**'] },
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
    // The domain never reaches into its adapters (DESIGN.md, "Shape").
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['**/rest/**', '**/realtime/**', '**/workers/**'] }],
    },
  },
  {
    files: ['scripts/**/*.mjs', 'bench/**/*.mjs', 'eslint.config.mjs'],
    languageOptions: { globals: globals.node },
  },
);
