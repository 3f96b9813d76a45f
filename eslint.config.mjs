// Lint rules: typescript-eslint's recommended set, plus what this codebase decided (see comments).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'release/', '.node/', '.envoy/', '.data/', 'test/golden/'] },
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
    // Tests and benchmarks read JSON from Envoy's admin API and other clients' output.
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
