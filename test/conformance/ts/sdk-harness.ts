/**
 * Builds the TypeScript SDK client a call/pagination/privacy vector describes: fake clock, scripted random
 * numbers, scripted idempotency keys and tokens, scripted transport, the error table from schemas/errors.json.
 */
import { readFileSync } from 'node:fs';
import {
  AbortError,
  AgentGraphClient,
  AgentGraphError,
  type ErrorTable,
  type OperationSpec,
  PrivacyError,
  type RetrySettings,
  type DataClass,
  type Capabilities,
} from '../../../sdk-templates/typescript/src/index.js';
import type { ExecutorContext } from './executor.js';
import { jsonEqual } from './match.js';
import { type Exchange, ScriptedTransport } from './scripted-transport.js';

export const DEFAULT_BASE_URL = 'https://api.agentgraph.test/graphql';

export const errorTable = JSON.parse(
  readFileSync(new URL('../../../schemas/errors.json', import.meta.url), 'utf8'),
) as ErrorTable;

export interface VectorConfig {
  baseUrl?: string;
  retry?: Partial<RetrySettings>;
  maxPayloadBytes?: number;
  privacyPolicy?: { allow: DataClass[] };
  capabilities?: Capabilities;
  tokens?: { current: string; refreshes?: (string | null)[] };
  idempotencyKeys?: string[];
}

export interface ExpectedError {
  code: string;
  class?: string;
  retryable?: boolean;
  status?: number;
  retryAfterMs?: number;
  correlationId?: string;
  attempts?: number;
  giveUpReason?: string;
  refusals?: { path: string; reason: string }[];
  messageExcludes?: string[];
}

export interface Harness {
  client: AgentGraphClient;
  transport: ScriptedTransport;
  counters: { keysMade: number; tokenRefreshes: number };
  problems: string[];
}

export function buildHarness(
  config: VectorConfig | undefined,
  exchanges: Exchange[],
  ctx: ExecutorContext,
): Harness {
  const cfg = config ?? {};
  const problems: string[] = [];
  const counters = { keysMade: 0, tokenRefreshes: 0 };
  const transport = new ScriptedTransport(exchanges, ctx.clock);
  const keys = [...(cfg.idempotencyKeys ?? [])];
  const tokens = cfg.tokens
    ? { current: cfg.tokens.current, refreshes: [...(cfg.tokens.refreshes ?? [])] }
    : null;
  const client = new AgentGraphClient({
    baseUrl: cfg.baseUrl ?? DEFAULT_BASE_URL,
    errorTable,
    fetch: transport.fetch,
    clock: ctx.clock,
    random: ctx.random,
    newKey: () => {
      counters.keysMade += 1;
      const key = keys.shift();
      if (key === undefined) {
        problems.push(`the SDK made idempotency key #${counters.keysMade}, the vector lists fewer`);
        return `unexpected-key-${counters.keysMade}`;
      }
      return key;
    },
    ...(tokens
      ? {
          tokenProvider: {
            getToken: async () => tokens.current,
            refresh: async () => {
              counters.tokenRefreshes += 1;
              const next = tokens.refreshes.shift();
              if (next === undefined || next === null) throw new Error('scripted refresh failure');
              tokens.current = next;
              return next;
            },
          },
        }
      : {}),
    ...(cfg.retry ? { retry: cfg.retry } : {}),
    ...(cfg.maxPayloadBytes !== undefined ? { maxPayloadBytes: cfg.maxPayloadBytes } : {}),
    ...(cfg.privacyPolicy ? { privacyPolicy: cfg.privacyPolicy } : {}),
    ...(cfg.capabilities ? { capabilities: cfg.capabilities } : {}),
  });
  return { client, transport, counters, problems };
}

export function operationOf(op: OperationSpec): OperationSpec {
  return {
    name: op.name,
    document: op.document,
    kind: op.kind,
    idempotent: op.idempotent,
    privacy: op.privacy,
  };
}

/** Problems between a thrown value and the expected error. */
export function errorProblems(expected: ExpectedError, thrown: unknown): string[] {
  if (expected.code === 'ABORTED') {
    return thrown instanceof AbortError ? [] : [`expected an AbortError, got ${describeThrown(thrown)}`];
  }
  if (!(thrown instanceof AgentGraphError))
    return [`expected AgentGraphError ${expected.code}, got ${describeThrown(thrown)}`];
  const problems: string[] = [];
  const check = (field: string, want: unknown, got: unknown) => {
    if (want !== undefined && !jsonEqual(want, got)) {
      problems.push(`error.${field}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
    }
  };
  check('code', expected.code, thrown.code);
  check('class', expected.class, thrown.constructor.name);
  check('retryable', expected.retryable, thrown.retryable);
  check('status', expected.status, thrown.status);
  check('retryAfterMs', expected.retryAfterMs, thrown.retryAfterMs);
  check('correlationId', expected.correlationId, thrown.correlationId);
  check('attempts', expected.attempts, thrown.attempts);
  check('giveUpReason', expected.giveUpReason, thrown.giveUpReason);
  if (expected.refusals) {
    check('refusals', expected.refusals, thrown instanceof PrivacyError ? thrown.refusals : undefined);
  }
  for (const secret of expected.messageExcludes ?? []) {
    if (thrown.message.includes(secret)) problems.push(`error.message contains a refused value`);
  }
  return problems;
}

export function describeThrown(thrown: unknown): string {
  if (thrown instanceof AgentGraphError)
    return `${thrown.constructor.name} ${thrown.code}: ${thrown.message}`;
  if (thrown instanceof Error) return `${thrown.name}: ${thrown.message}`;
  return JSON.stringify(thrown);
}

export function fail(file: string, problems: string[]): void {
  if (problems.length > 0) throw new Error(`${file}:\n  - ${problems.join('\n  - ')}`);
}
