// One lint setup for the whole repository (flat config). Formatting is prettier's job (`prettier --check` in
// `npm run lint`); these rules are about correctness. TypeScript files get typescript-eslint's recommended
// rules plus the type-aware rules that catch real server bugs (unhandled promises, promises where callbacks
// are expected, awaiting non-promises), using the project service (one TypeScript program, about as fast as
// `tsc --noEmit`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'queueMicrotask',
    'structuredClone',
    'fetch',
    'AbortController',
    'TextEncoder',
    'TextDecoder',
  ].map((name) => [name, 'readonly']),
);

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/.data/**',
      '**/.tmp/**',
      'coverage/**',
      'bench/results/**',
      'web/dist/**',
      'web/.dist-*/**',
      'test-results/**',
      'sdks/**',
      '**/generated/**',
      'schemas/*.graphql',
    ],
  },
  js.configs.recommended,
  {
    files: ['**/*.{js,mjs,cjs}'],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: nodeGlobals },
  },
  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [tseslint.configs.recommended],
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.config.ts', 'web/vite.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { prefer: 'type-imports', fixStyle: 'inline-type-imports' },
      ],
    },
  },
  {
    // Tests read untyped JSON from HTTP answers and poke at internals.
    files: ['**/test/**/*.ts', 'test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
