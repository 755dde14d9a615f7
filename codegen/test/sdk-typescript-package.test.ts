/**
 * The TypeScript SDK as a third party gets it: `npm pack` of @agentgraph/sdk-runtime and @agentgraph/sdk (their
 * prepack builds dist/), both tarballs installed into an empty folder outside the repository, then
 *
 * - an example `.mjs` run with plain `node` (no tsx, no source condition) against the real platform on loopback: a
 *   query, a mutation with an idempotency key (sent twice: the second is a replay), and a paginated list;
 * - a small `.ts` consumer type-checked with the packages' `.d.ts` (moduleResolution node16 and bundler);
 * - the browser entry bundled by Vite for the browser: its module graph has no `node:` import and no Node-only file.
 *
 * The install leaves out optional dependencies (better-sqlite3 is one: a native build from source here, with no
 * prebuilt binaries reachable), which also shows the SDK imports in Node without it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build, type Rollup } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform, type TestUser } from '../../test/src/platform.js';
import { ROOT } from './sdk-fixture.js';

const run = promisify(execFile);
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const RUNTIME_DIR = join(ROOT, 'sdk-templates/typescript');
const SDK_DIR = join(ROOT, 'sdks/typescript');
const version = (JSON.parse(readFileSync(join(RUNTIME_DIR, 'package.json'), 'utf8')) as { version: string })
  .version;

let dir: string;
let app: string;
let platform: TestPlatform;
let user: TestUser;
const timings: Record<string, number> = {};

async function timed<T>(name: string, step: () => Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await step();
  } finally {
    timings[name] = Math.round(performance.now() - start);
  }
}

/** Runs a command; its output is in the error when it fails. */
async function sh(command: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await run(command, args, { cwd, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
  }
}

/** npm pack into `dir` (prepack runs the package's build); returns the tarball's path. */
async function pack(packageDir: string, file: string): Promise<string> {
  await sh('npm', ['pack', '--pack-destination', dir, '--silent'], packageDir);
  const tarball = join(dir, file);
  expect(existsSync(tarball), `${file} was not written`).toBe(true);
  return tarball;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentgraph-sdk-package-'));
  app = join(dir, 'app');
  mkdirSync(app);
  const starting = timed('platform', () => startTestPlatform());
  try {
    // The runtime first: the SDK's build compiles against the runtime's declarations in dist/.
    const runtimeTgz = await timed('pack runtime', () =>
      pack(RUNTIME_DIR, `agentgraph-sdk-runtime-${version}.tgz`),
    );
    const sdkTgz = await timed('pack sdk', () => pack(SDK_DIR, `agentgraph-sdk-${version}.tgz`));
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }, null, 2),
    );
    await timed('npm install', () =>
      sh(
        'npm',
        ['install', runtimeTgz, sdkTgz, '--no-audit', '--no-fund', '--prefer-offline', '--omit=optional'],
        app,
      ),
    );
  } finally {
    platform = await starting;
    // Leave no build output in the repository: inside it the packages run from source (@agentgraph/source).
    rmSync(join(RUNTIME_DIR, 'dist'), { recursive: true, force: true });
    rmSync(join(SDK_DIR, 'dist'), { recursive: true, force: true });
  }
  user = await platform.tokenFor({ tenant: 'sdk-package' });
}, 180_000);

afterAll(async () => {
  await platform?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify({ sdkPackageTimingsMs: timings }));
});

describe('the packed TypeScript SDK, installed in an empty folder', () => {
  it('installs both packages from their tarballs: compiled ESM, .d.ts and source maps, no runtime copy', () => {
    const installed = (name: string) =>
      JSON.parse(readFileSync(join(app, 'node_modules', name, 'package.json'), 'utf8')) as {
        version: string;
        dependencies?: Record<string, string>;
      };
    expect(installed('@agentgraph/sdk-runtime').version).toBe(version);
    expect(installed('@agentgraph/sdk').dependencies).toEqual({ '@agentgraph/sdk-runtime': version });
    for (const file of ['index.js', 'index.d.ts', 'index.js.map', 'index.node.js', 'index.node.d.ts']) {
      expect(existsSync(join(app, 'node_modules/@agentgraph/sdk-runtime/dist', file)), file).toBe(true);
    }
    for (const file of ['index.js', 'index.d.ts', 'client.js', 'client.d.ts.map']) {
      expect(existsSync(join(app, 'node_modules/@agentgraph/sdk/dist', file)), file).toBe(true);
    }
    expect(existsSync(join(app, 'node_modules/@agentgraph/sdk/dist/runtime'))).toBe(false);
    expect(existsSync(join(app, 'node_modules/better-sqlite3'))).toBe(false); // optional, left out
  });

  it('runs an example with plain node: a query, a mutation with an idempotency key, a paginated list', async () => {
    writeFileSync(
      join(app, 'example.mjs'),
      `import { AgentGraph, NotFoundError } from '@agentgraph/sdk';

const [baseUrl, token] = process.argv.slice(2);
const sdk = new AgentGraph({
  baseUrl,
  tokenProvider: { getToken: async () => token, refresh: async () => token },
  privacyPolicy: { allow: ['PUBLIC', 'INTERNAL', 'PERSONAL'] },
});

const viewer = await sdk.viewer();
const rooms = [];
for (const name of ['packed-a', 'packed-b', 'packed-c']) {
  rooms.push((await sdk.createRoom({ input: { name } })).createRoom.room);
}
const idempotencyKey = crypto.randomUUID();
const input = { body: 'hello from a tarball' };
const posted = await sdk.postMessage({ roomId: rooms[0].id, input }, { idempotencyKey }).withResponse();
const again = await sdk.postMessage({ roomId: rooms[0].id, input }, { idempotencyKey }).withResponse();
const listed = [];
for await (const room of sdk.paginateRooms({ first: 2 })) listed.push(room.name);
let missing = null;
try {
  await sdk.postMessage({ roomId: crypto.randomUUID(), input });
} catch (err) {
  missing = err instanceof NotFoundError ? err.code : String(err);
}
console.log(JSON.stringify({
  email: viewer.viewer.user.email,
  seq: posted.data.postMessage.message.seq,
  sameMessage: again.data.postMessage.message.id === posted.data.postMessage.message.id,
  replayed: [posted.replayed, again.replayed],
  listed: listed.sort(),
  missing,
}));
`,
    );
    const stdout = await timed('example', () =>
      sh(process.execPath, ['example.mjs', `${platform.gatewayUrl}/graphql`, user.token], app),
    );
    expect(JSON.parse(stdout)).toEqual({
      email: user.email,
      seq: 1,
      sameMessage: true,
      replayed: [false, true],
      listed: ['packed-a', 'packed-b', 'packed-c'],
      missing: 'NOT_FOUND',
    });
  });

  it('has Node-only stores that say what to install when better-sqlite3 is missing', async () => {
    writeFileSync(
      join(app, 'outbox.mjs'),
      `import { SqliteOutboxStore } from '@agentgraph/sdk';
try {
  SqliteOutboxStore.open(':memory:');
  console.log('opened');
} catch (err) {
  console.log(err.message);
}
`,
    );
    const stdout = await sh(process.execPath, ['outbox.mjs'], app);
    expect(stdout).toContain('need better-sqlite3');
    expect(stdout).toContain('npm install better-sqlite3');
  });

  it('type-checks a TypeScript consumer against the .d.ts files (moduleResolution node16 and bundler)', async () => {
    writeFileSync(
      join(app, 'consumer.ts'),
      `import { AgentGraph, NotFoundError, Outbox, type ViewerData, type PostMessageVariables } from '@agentgraph/sdk';

export async function whoAmI(sdk: AgentGraph): Promise<string> {
  const data: ViewerData = await sdk.viewer();
  const { replayed, attempts, response } = await sdk.viewer().withResponse();
  return \`\${data.viewer.user.email} \${replayed} \${attempts} \${response.status}\`;
}

export function postLater(outbox: Outbox, variables: PostMessageVariables) {
  return outbox.enqueue({ room: variables.roomId, operation: 'PostMessage', variables: { ...variables } });
}

export const isMissing = (err: unknown) => err instanceof NotFoundError;

export async function wrong(sdk: AgentGraph) {
  // @ts-expect-error roomId is a string, input is required
  await sdk.postMessage({ roomId: 42 });
}
`,
    );
    const check = async (resolution: 'node16' | 'bundler') => {
      writeFileSync(
        join(app, `tsconfig.${resolution}.json`),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: resolution === 'node16' ? 'node16' : 'ESNext',
            moduleResolution: resolution,
            lib: ['ES2023', 'DOM'],
            strict: true,
            skipLibCheck: true,
            noEmit: true,
            types: [],
          },
          files: ['consumer.ts'],
        }),
      );
      await sh(process.execPath, [TSC, '-p', `tsconfig.${resolution}.json`], app);
    };
    await timed('tsc node16 + bundler', () => Promise.all([check('node16'), check('bundler')]));
  });

  it('bundles for the browser: the browser entry has no node: import and no Node-only module', async () => {
    writeFileSync(
      join(app, 'browser.mjs'),
      `export { AgentGraph, Outbox, createSubscriptions, NotFoundError } from '@agentgraph/sdk';\n`,
    );
    const requested: string[] = [];
    const nodeBuiltins = new Set(builtinModules);
    const output = (await timed('browser bundle', () =>
      build({
        configFile: false,
        root: app,
        logLevel: 'silent',
        plugins: [
          {
            name: 'record-node-imports',
            enforce: 'pre',
            resolveId(source) {
              if (source.startsWith('node:') || nodeBuiltins.has(source)) requested.push(source);
              return null;
            },
          },
        ],
        build: {
          write: false,
          minify: false,
          lib: { entry: join(app, 'browser.mjs'), formats: ['es'], fileName: 'sdk' },
        },
      }),
    )) as Rollup.RollupOutput[];
    const chunks = output.flatMap((o) => o.output).filter((c): c is Rollup.OutputChunk => c.type === 'chunk');
    const modules = chunks.flatMap((c) => c.moduleIds);
    expect(requested).toEqual([]);
    // The runtime's browser build is in the graph (its barrel may be tree-shaken away: sideEffects false).
    for (const file of ['client.js', 'outbox/outbox.js', 'subscriptions/subscriber.js']) {
      expect(
        modules.some((m) => m.endsWith(`/sdk-runtime/dist/${file}`)),
        file,
      ).toBe(true);
    }
    expect(modules.filter((m) => /\.node\.js$|better-sqlite3/.test(m))).toEqual([]);
    const code = chunks.map((c) => c.code).join('\n');
    expect(code).not.toMatch(/from ["']node:|require\(["']node:/);
    expect(chunks[0]!.exports).toEqual(
      expect.arrayContaining(['AgentGraph', 'Outbox', 'createSubscriptions', 'NotFoundError']),
    );
  });
});
