/**
 * Gateway test harness: two small stub subgraphs (alpha owns Query/Mutation/Subscription and Thing.name; beta
 * resolves Thing.detail through entity resolution) served by the runtime's real subgraph server on port 0, composed
 * with @apollo/composition, behind a real gateway on port 0. Tokens are ES256, signed locally. Nothing here depends
 * on the product subgraphs, so these tests pin the gateway's own behaviour.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { composeServices } from '@apollo/composition';
import { buildSubgraphSchema } from '@apollo/subgraph';
import {
  AppError,
  createLogger,
  createSubgraphServer,
  createTokenVerifier,
  loadConfig,
  type Config,
  type Database,
  type RunningServer,
  type SubgraphContext,
} from '@agentgraph/runtime';
import { GraphQLError, parse } from 'graphql';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { createGateway, type Gateway, type GatewayOptions, type Timers } from '../src/index.js';

export const ALPHA_SDL = /* GraphQL */ `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Query {
    things(first: Int = 10, after: String): [Thing!]!
    thing(id: ID!): Thing
    missing: Thing
    boom: String
    node: Node
    slow: String
  }
  type Node {
    name: String
    child: Node
  }
  type Mutation {
    touch(idempotencyKey: ID!, label: String!): Thing!
  }
  type Subscription {
    """
    first: only for the page-size limit tests (the stream ignores it).
    """
    ticks(from: Int, first: Int): Tick!
  }
  type Tick {
    n: Int!
    thing: Thing!
    note: String
  }
  type Thing @key(fields: "id") {
    id: ID!
    name: String!
  }
`;

export const BETA_SDL = /* GraphQL */ `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Thing @key(fields: "id") {
    id: ID!
    detail: String!
    viewer: String
  }
`;

const ISSUER = 'https://identity.gateway-test';
const AUDIENCE = 'agentgraph';

/** A hand-driven source for the alpha subgraph's Subscription.ticks: tests push events and observe when it ends. */
export class TickSource {
  readonly events = new EventEmitter();
  active = 0;
  private waiters: Array<{ n: number; resolve: () => void }> = [];
  push(n: number): void {
    this.events.emit('tick', n);
  }
  /** Ends every open upstream subscription (as if the subgraph completed it). */
  completeAll(): void {
    this.events.emit('end');
  }
  activeBecomes(n: number): Promise<void> {
    if (this.active === n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }
  changed(): void {
    this.waiters = this.waiters.filter((w) => {
      if (w.n !== this.active) return true;
      w.resolve();
      return false;
    });
  }
  async *stream(
    signal: AbortSignal,
    from: number,
  ): AsyncGenerator<{ ticks: { n: number; thing: { id: string; name: string } } }> {
    const queue: number[] = [];
    let ended = false;
    let wake: (() => void) | null = null;
    const poke = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    const onTick = (n: number) => {
      queue.push(n);
      poke();
    };
    const onEnd = () => {
      ended = true;
      poke();
    };
    this.events.on('tick', onTick);
    this.events.on('end', onEnd);
    signal.addEventListener('abort', onEnd);
    this.active++;
    this.changed();
    try {
      // "Backlog": everything up to `from` is replayed first.
      for (let n = 1; n <= from; n++) yield { ticks: { n, thing: { id: `t${n}`, name: `thing t${n}` } } };
      for (;;) {
        while (queue.length) {
          const n = queue.shift()!;
          if (n < 0) throw new Error('tick source exploded: secret detail');
          yield { ticks: { n, thing: { id: `t${n}`, name: `thing t${n}` } } };
        }
        if (ended || signal.aborted) return;
        await new Promise<void>((r) => (wake = r));
      }
    } finally {
      this.events.off('tick', onTick);
      this.events.off('end', onEnd);
      signal.removeEventListener('abort', onEnd);
      this.active--;
      this.changed();
    }
  }
}

/** Holds `Query.slow` until released, and says when a request reached it. */
export class Gate {
  private enteredResolve!: () => void;
  private releaseResolve!: () => void;
  readonly entered = new Promise<void>((r) => (this.enteredResolve = r));
  readonly released = new Promise<void>((r) => (this.releaseResolve = r));
  enter(): void {
    this.enteredResolve();
  }
  release(): void {
    this.releaseResolve();
  }
}

export interface Seen {
  correlationIds: string[];
  authorizations: Array<string | null>;
  alphaRequests: number;
  slowCalls: number;
  touches: Map<string, { label: string; result: { id: string; name: string } }>;
}

export interface FakeTimers extends Timers {
  /** Runs every registered interval callback once. */
  tick(): void;
  readonly active: number;
}

export function fakeTimers(): FakeTimers {
  const intervals = new Map<number, () => void>();
  let next = 1;
  return {
    setInterval(fn) {
      const id = next++;
      intervals.set(id, fn);
      return id;
    },
    clearInterval(id) {
      intervals.delete(id as number);
    },
    tick() {
      for (const fn of [...intervals.values()]) fn();
    },
    get active() {
      return intervals.size;
    },
  };
}

export interface Harness {
  gateway: Gateway;
  url: string;
  config: Config;
  ticks: TickSource;
  /** The gate `Query.slow` waits on; `newGate()` replaces it (and returns the new one). */
  readonly slow: Gate;
  newGate(): Gate;
  seen: Seen;
  timers: FakeTimers;
  logs: string[];
  alpha: RunningServer;
  beta: RunningServer;
  token(opts?: { tenantId?: string; sub?: string; expiresIn?: string; scope?: string }): Promise<string>;
  post(
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; json: any }>;
  gql(
    query: string,
    variables?: Record<string, unknown>,
    token?: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; json: any }>;
  close(): Promise<void>;
}

const fakeDb = { driver: 'pglite', ping: async () => undefined } as unknown as Database;

export async function startHarness(
  env: Record<string, string> = {},
  opts: {
    streamMultiplex?: boolean;
    streamReservations?: GatewayOptions['streamReservations'];
    now?: () => number;
  } = {},
): Promise<Harness> {
  const config = loadConfig({
    DATA_DIR: 'memory://',
    LOG_LEVEL: 'info',
    TOKEN_ISSUER: ISSUER,
    TOKEN_AUDIENCE: AUDIENCE,
    MAX_BODY_BYTES: '4096',
    MAX_DEPTH: '6',
    MAX_ALIASES: '5',
    MAX_PAGE_SIZE: '50',
    SHUTDOWN_GRACE_MS: '5000',
    ...env,
  });
  const logs: string[] = [];
  const log = createLogger({ service: 'gateway-test' }, { level: 'info', write: (l) => logs.push(l) });
  const quiet = createLogger({ service: 'stub' }, { level: 'error', write: (l) => logs.push(l) });

  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = 'gw-test';
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const verifyToken = createTokenVerifier({
    issuer: ISSUER,
    audience: AUDIENCE,
    keys: createLocalJWKSet({ keys: [jwk] }),
  });

  const ticks = new TickSource();
  const gates = { slow: new Gate() };
  const seen: Seen = {
    correlationIds: [],
    authorizations: [],
    alphaRequests: 0,
    slowCalls: 0,
    touches: new Map(),
  };
  const record = (ctx: SubgraphContext) => {
    seen.correlationIds.push(ctx.correlationId);
  };

  const alphaSchema = buildSubgraphSchema({
    typeDefs: parse(ALPHA_SDL),
    resolvers: {
      Query: {
        things: (_: unknown, args: { first: number }, ctx: SubgraphContext) => {
          record(ctx);
          seen.alphaRequests++;
          return Array.from({ length: Math.min(args.first, 3) }, (_, i) => ({
            id: `t${i + 1}`,
            name: `thing ${i + 1}`,
          }));
        },
        thing: (_: unknown, args: { id: string }) => ({ id: args.id, name: `thing ${args.id}` }),
        missing: () => {
          throw new AppError('NOT_FOUND', 'That thing was not found or is not visible to you.');
        },
        boom: () => {
          throw new Error('database password is hunter2');
        },
        node: () => ({ name: 'root', child: null }),
        slow: async () => {
          const gate = gates.slow;
          seen.slowCalls++;
          gate.enter();
          await gate.released;
          return 'finally';
        },
      },
      Mutation: {
        touch: (_: unknown, args: { idempotencyKey: string; label: string }, ctx: SubgraphContext) => {
          const prior = seen.touches.get(args.idempotencyKey);
          if (prior) {
            if (prior.label !== args.label)
              throw new AppError('IDEMPOTENCY_KEY_REUSED', 'Key reused with other arguments.');
            ctx.responseExtensions['idempotentReplay'] = true;
            return prior.result;
          }
          const result = { id: randomUUID(), name: args.label };
          seen.touches.set(args.idempotencyKey, { label: args.label, result });
          return result;
        },
      },
      Subscription: {
        ticks: {
          subscribe: (_: unknown, args: { from?: number }, ctx: SubgraphContext) =>
            ticks.stream(ctx.signal, args.from ?? 0),
        },
      },
      Thing: {
        __resolveReference: (ref: { id: string }) => ({ id: ref.id, name: `thing ${ref.id}` }),
      },
      Tick: {
        note: (t: { n: number }) => {
          if (t.n === 99) throw new Error('note store failed: secret detail');
          return null;
        },
      },
    } as never,
  });
  const betaSchema = buildSubgraphSchema({
    typeDefs: parse(BETA_SDL),
    resolvers: {
      Thing: {
        __resolveReference: (ref: { id: string }, ctx: SubgraphContext) => {
          record(ctx);
          return { id: ref.id };
        },
        detail: (t: { id: string }) => `detail of ${t.id}`,
        viewer: (_: unknown, __: unknown, ctx: SubgraphContext) => {
          seen.authorizations.push(ctx.auth?.principalId ?? null);
          return ctx.auth?.principalId ?? null;
        },
      },
    } as never,
  });

  const alpha = await createSubgraphServer({
    name: 'alpha',
    schema: alphaSchema,
    config,
    db: fakeDb,
    log: quiet,
    verifyToken,
  }).listen(0, '127.0.0.1');
  const beta = await createSubgraphServer({
    name: 'beta',
    schema: betaSchema,
    config,
    db: fakeDb,
    log: quiet,
    verifyToken,
  }).listen(0, '127.0.0.1');

  const composed = composeServices([
    { name: 'alpha', typeDefs: parse(ALPHA_SDL), url: 'http://127.0.0.1:1/graphql' },
    { name: 'beta', typeDefs: parse(BETA_SDL), url: 'http://127.0.0.1:2/graphql' },
  ]);
  if (composed.errors?.length || !composed.supergraphSdl) {
    throw new Error(`composition failed: ${composed.errors?.map((e) => e.message).join('; ')}`);
  }

  const timers = fakeTimers();
  const gateway = await createGateway({
    config,
    log,
    supergraphSdl: composed.supergraphSdl,
    subgraphUrls: { alpha: `${alpha.url}/graphql`, beta: `${beta.url}/graphql` },
    verifyToken,
    timers,
    streamMultiplex: opts.streamMultiplex,
    streamReservations: opts.streamReservations,
    now: opts.now,
    subgraphSchemas: new Map([
      ['alpha', buildSubgraphSchema({ typeDefs: parse(ALPHA_SDL) })],
      ['beta', buildSubgraphSchema({ typeDefs: parse(BETA_SDL) })],
    ]),
  });
  const url = await gateway.listen(0, '127.0.0.1');

  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, headers: res.headers, json: json as any };
  };

  let closed: Promise<void> | null = null;
  return {
    gateway,
    url,
    config,
    ticks,
    get slow() {
      return gates.slow;
    },
    newGate() {
      gates.slow.release();
      gates.slow = new Gate();
      return gates.slow;
    },
    seen,
    timers,
    logs,
    alpha,
    beta,
    async token(opts = {}) {
      return new SignJWT({
        tid: opts.tenantId ?? randomUUID(),
        role: 'OPERATOR',
        scope: opts.scope ?? 'api:read api:write',
      })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .setSubject(opts.sub ?? `user-${randomUUID()}`)
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(opts.expiresIn ?? '15m')
        .sign(privateKey);
    },
    post,
    gql(query, variables, token, headers = {}) {
      return post(
        { query, variables },
        { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      );
    },
    close() {
      closed ??= (async () => {
        await gateway.close();
        await alpha.close();
        await beta.close();
      })();
      return closed;
    },
  };
}

export { GraphQLError };
