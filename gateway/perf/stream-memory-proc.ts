/**
 * A child process for gateway/perf/stream-memory.ts: `subgraph` serves a stub subgraph on the runtime's real subgraph
 * server (one idle subscription, `Subscription.idle`, which never yields and ends when its signal aborts), `gateway`
 * serves our real gateway in front of it. Both accept any bearer token (a fixed caller, expiring in an hour), answer
 * an IPC {type:'memory'} with their memory after a full GC (run with --expose-gc) and {type:'snapshot', file} with a
 * V8 heap snapshot, and send {type:'ready', url} once listening.
 *
 *   tsx gateway/perf/stream-memory-proc.ts subgraph
 *   SUBGRAPH_URL=http://127.0.0.1:1234 tsx gateway/perf/stream-memory-proc.ts gateway
 */
import { Session } from 'node:inspector/promises';
import { writeHeapSnapshot } from 'node:v8';
import { composeServices } from '@apollo/composition';
import { buildSubgraphSchema } from '@apollo/subgraph';
import {
  createLogger,
  createSubgraphServer,
  loadConfig,
  type AuthContext,
  type Database,
  type SubgraphContext,
  type TokenVerifier,
} from '@agentgraph/runtime';
import { parse } from 'graphql';
import { createGateway } from '../src/index.js';

export const STUB_SDL = /* GraphQL */ `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Query {
    ok: Boolean
  }
  type Subscription {
    idle: Int
  }
`;

const role = process.argv[2];
const config = loadConfig({ DATA_DIR: 'memory://', LOG_LEVEL: 'warn', TOKEN_AUDIENCE: 'agentgraph' });
const log = createLogger({ service: `stream-memory-${role}` }, { level: 'warn' });
const expiresAt = Math.floor(Date.now() / 1000) + 3600;
const verifyToken: TokenVerifier = async (authorization) =>
  authorization?.startsWith('Bearer ')
    ? ({
        tenantId: '00000000-0000-4000-8000-000000000001',
        principalId: '00000000-0000-4000-8000-000000000002',
        role: 'OWNER',
        scopes: ['api:read', 'api:write'],
        tokenId: authorization.slice(7),
        expiresAt,
      } as AuthContext)
    : null;

// The parent going away (or never sending 'stop') ends this process too.
process.on('disconnect', () => process.exit(0));
process.on('message', (m: { type?: string; file?: string }) => {
  if (m?.type === 'memory') {
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    const u = process.memoryUsage();
    process.send?.({ type: 'memory', gc: Boolean(gc), ...u });
  } else if (m?.type === 'snapshot' && m.file) {
    (globalThis as { gc?: () => void }).gc?.();
    process.send?.({ type: 'snapshot', file: writeHeapSnapshot(m.file) });
  } else if (m?.type === 'sampling-start') {
    void startSampling().then(() => process.send?.({ type: 'sampling-start' }));
  } else if (m?.type === 'sampling-stop') {
    void stopSampling().then((profile) => process.send?.({ type: 'sampling-stop', profile }));
  } else if (m?.type === 'stop') {
    process.exit(0);
  }
});

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}
let session: Session | null = null;
async function startSampling(): Promise<void> {
  session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', { samplingInterval: 128 });
}
/** Live bytes (sampled) by allocating stack, as "frame <- caller <- ..." (innermost 6 frames), and by package. */
async function stopSampling(): Promise<{ stacks: Record<string, number>; packages: Record<string, number> }> {
  (globalThis as { gc?: () => void }).gc?.();
  const { profile } = (await session!.post('HeapProfiler.stopSampling')) as {
    profile: { head: SamplingNode };
  };
  session!.disconnect();
  const stacks: Record<string, number> = {};
  const packages: Record<string, number> = {};
  const frameName = (f: SamplingNode['callFrame']) => {
    const file = f.url.replace(/^.*node_modules\//, '').replace(/^.*\/work\/main\//, '');
    return `${f.functionName || '(anon)'} ${file}:${f.lineNumber + 1}`;
  };
  const packageOf = (path: SamplingNode['callFrame'][]) => {
    for (let i = path.length - 1; i >= 0; i--) {
      const url = path[i]!.url;
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url) ?? /\/work\/main\/([^/]+\/[^/]+)/.exec(url);
      if (m) return m[1]!;
      if (url.startsWith('node:')) return url;
    }
    return '(native)';
  };
  const walk = (node: SamplingNode, path: SamplingNode['callFrame'][]) => {
    const here = [...path, node.callFrame];
    if (node.selfSize) {
      const key = here.slice(-6).reverse().map(frameName).join(' <- ');
      stacks[key] = (stacks[key] ?? 0) + node.selfSize;
      const pkg = packageOf(here);
      packages[pkg] = (packages[pkg] ?? 0) + node.selfSize;
    }
    for (const c of node.children) walk(c, here);
  };
  walk(profile.head, []);
  return { stacks, packages };
}

if (role === 'subgraph') {
  const schema = buildSubgraphSchema({
    typeDefs: parse(STUB_SDL),
    resolvers: {
      Query: { ok: () => true },
      Subscription: {
        idle: {
          async *subscribe(_: unknown, __: unknown, ctx: SubgraphContext) {
            if (ctx.signal.aborted) return;
            await new Promise<void>((resolve) =>
              ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
            );
            yield { idle: 0 };
          },
        },
      },
    } as never,
  });
  const db = { driver: 'pglite', ping: async () => undefined } as unknown as Database;
  const running = await createSubgraphServer({ name: 'stub', schema, config, db, log, verifyToken }).listen(
    0,
    '127.0.0.1',
  );
  process.send?.({ type: 'ready', url: running.url });
} else if (role === 'gateway') {
  const subgraphUrl = process.env['SUBGRAPH_URL'];
  if (!subgraphUrl) throw new Error('Set SUBGRAPH_URL to the stub subgraph origin.');
  const composed = composeServices([
    { name: 'stub', typeDefs: parse(STUB_SDL), url: 'http://127.0.0.1:1/graphql' },
  ]);
  if (!composed.supergraphSdl) throw new Error(`composition failed: ${String(composed.errors)}`);
  const gateway = await createGateway({
    config,
    log,
    supergraphSdl: composed.supergraphSdl,
    subgraphUrls: { stub: `${subgraphUrl}/graphql` },
    verifyToken,
    subgraphSchemas: new Map([['stub', buildSubgraphSchema({ typeDefs: parse(STUB_SDL) })]]),
  });
  process.send?.({ type: 'ready', url: await gateway.listen(0, '127.0.0.1') });
} else {
  throw new Error('Usage: stream-memory-proc.ts subgraph|gateway');
}
