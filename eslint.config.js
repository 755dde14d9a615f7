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

// Module boundaries: the "May import" line of each folder's README, as `no-restricted-imports` patterns, each
// message quoting the line. A pattern's regex is matched against the import as written: `@agentgraph/<package>`, or a
// relative path that climbs out of the folder (`../../subgraphs/identity/src/x.js`; `../identity/…` from a sibling
// subgraph). Each file gets exactly one entry (a later `no-restricted-imports` replaces an earlier one, it does not
// add to it). A folder's tests (`<folder>/test/`) may also import the test harness (`test/src/`,
// `test/fault-proxy/src/`); `test/` and `bench/` may import anything. Dynamic `import()` is not checked.
// test/lint/boundaries.test.ts proves a forbidden import fails lint.
const SUBGRAPHS = ['identity', 'memory', 'coordination', 'catalog'];
const TOP_FOLDERS = ['runtime', 'gateway', 'codegen', 'bench', 'web', 'sdks', 'sdk-templates'];

/** Regex: a relative import that climbs out to one of `paths` (each ends with `/`). */
const climbsTo = (paths) => `^(\\.\\./)+(${paths.join('|')})`;

/**
 * What a file in folder `own` must not reach by a relative path; `harness`: the test harness is allowed; `also`: more
 * folders it may reach. The web console by `web/src/` (identity's tests have a `test/web/` of their own).
 */
function otherFolders(own, { harness, also = [] }) {
  const paths = TOP_FOLDERS.filter((folder) => folder !== own && !also.includes(folder)).map((folder) =>
    folder === 'web' ? 'web/src/' : `${folder}/`,
  );
  paths.push(harness ? 'test/(?!src/|fault-proxy/src/)' : 'test/');
  for (const name of SUBGRAPHS) {
    if (`subgraphs/${name}` === own) continue;
    paths.push(`subgraphs/${name}/`);
    if (own.startsWith('subgraphs/')) paths.push(`${name}/`);
  }
  return paths;
}

/** `files` (minus `ignores`) may import npm packages and `@agentgraph/<allowed>`, nothing else of the repository. */
function boundary({ own, files, ignores = [], readme, line, allowed = [], harness = false, also = [] }) {
  const message = `${readme} says "${line}"`;
  const agentgraph = allowed.length > 0 ? `^@agentgraph/(?!(${allowed.join('|')})$)` : '^@agentgraph/';
  return {
    files,
    ignores,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: agentgraph, message },
            { regex: climbsTo(otherFolders(own, { harness, also })), message },
          ],
        },
      ],
    },
  };
}

/** A folder's own code, and its tests (which may also import the test harness and the folders in `testsAlso`). */
const folderBoundary = ({ own, ignores = [], testsAlso = [], ...rest }) => [
  boundary({ own, files: [`${own}/**`], ignores: [`${own}/test/**`, ...ignores], ...rest }),
  boundary({ own, files: [`${own}/test/**`], ignores, harness: true, also: testsAlso, ...rest }),
];

const SUBGRAPH_LINE = 'May import: `@agentgraph/runtime` and npm packages. Never another subgraph.';
const GATEWAY_LINE =
  'May import: npm packages and `@agentgraph/runtime`. The subgraph packages only in the composition root ' +
  '(`src/platform.ts`, `src/main.ts`)';

const boundaries = [
  ...folderBoundary({
    own: 'runtime',
    readme: 'runtime/README.md',
    line: 'May import: npm packages only. Must not import subgraphs, the gateway, codegen or tests.',
  }),
  ...SUBGRAPHS.flatMap((name) =>
    folderBoundary({
      own: `subgraphs/${name}`,
      readme: `subgraphs/${name}/README.md`,
      line: SUBGRAPH_LINE,
      allowed: ['runtime'],
    }),
  ),
  ...folderBoundary({
    own: 'gateway',
    ignores: ['gateway/src/platform.ts', 'gateway/src/main.ts'],
    readme: 'gateway/README.md',
    line: GATEWAY_LINE,
    allowed: ['runtime'],
  }),
  boundary({
    own: 'gateway',
    files: ['gateway/src/platform.ts', 'gateway/src/main.ts'],
    readme: 'gateway/README.md',
    line: GATEWAY_LINE,
    allowed: ['runtime', ...SUBGRAPHS],
  }),
  ...folderBoundary({
    own: 'codegen',
    readme: 'codegen/README.md',
    line: 'May import: npm packages and `schemas/`. Must not import the runtime, subgraphs or the gateway.',
    testsAlso: ['sdks'], // the tests run what the generator made
  }),
  ...folderBoundary({
    own: 'web',
    readme: 'web/README.md',
    line: 'May import: the generated TypeScript SDK (`@agentgraph/sdk`) and npm packages (Preact). Never server code.',
    allowed: ['sdk'],
  }),
  ...folderBoundary({
    own: 'sdk-templates/typescript',
    readme: 'sdk-templates/typescript/README.md',
    line: 'May import: `jose` and web/Node builtins only — nothing from this repository.',
    // The OAuth test's end-to-end part enrols a device against the real platform: it approves the device code as
    // identity's console would (identity's oauth service) and drives the generated SDK. Only that file.
    ignores: ['sdk-templates/typescript/test/oauth/oauth.test.ts'],
  }),
];

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
      'sdk-templates/typescript/dist/**',
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
  ...boundaries,
);
