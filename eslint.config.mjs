// Lint rules: typescript-eslint's recommended set with type information on every TypeScript file,
// the promise and switch rules as errors, plus what this codebase decided (see comments).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'release/',
      '.node/',
      '.envoy/',
      '.data/',
      '.tmp/',
      '.grpc-go/',
      'test/golden/',
      'src/features/*/golden/',
      'src/features/*/rejected/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2024, sourceType: 'module', globals: { process: 'readonly', console: 'readonly' } },
    rules: {
      // Unused arguments named `_x` are part of a signature on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Node built-ins (Buffer, setTimeout, ...) are globals in every file here; TypeScript checks them.
      'no-undef': 'off',
      // `while (true)` loops with explicit breaks read better than their alternatives.
      'no-constant-condition': ['error', { checkLoops: false }],
      // A `let` assigned once, later, and read by a closure defined before (signal handlers) stays a `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Rules that need the type checker: tsconfig.check.json covers src/, test/ and bench/.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A promise nobody awaits or catches loses its error: `void` says the loss is meant.
      '@typescript-eslint/no-floating-promises': 'error',
      // An async function where a callback's result is ignored (event handlers, forEach) loses its error too.
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      // A switch over a union names every member, so a new kind cannot be forgotten.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/no-for-in-array': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/prefer-promise-reject-errors': 'error',
      '@typescript-eslint/no-implied-eval': 'error',
      '@typescript-eslint/restrict-plus-operands': 'error',
      '@typescript-eslint/no-base-to-string': 'error',
      '@typescript-eslint/no-duplicate-type-constituents': 'error',
      '@typescript-eslint/no-redundant-type-constituents': 'error',
      '@typescript-eslint/unbound-method': 'error',
    },
  },
  // The product's code also gets every other type-aware rule of the recommended set (values typed `any`
  // may not flow on unchecked); tests and benchmarks read JSON from clients and Envoy's admin API.
  ...tseslint.configs.recommendedTypeChecked.map((c) => ({ ...c, files: ['src/**/*.ts'] })),
  {
    files: ['src/**/*.ts'],
    rules: {
      // An async function without await is the implementation of an async interface (fastify routes, hooks).
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Tests and benchmarks read JSON from Envoy's admin API and other clients' output.
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/unbound-method': 'off' },
  },
);
