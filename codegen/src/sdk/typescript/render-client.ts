/**
 * src/client.ts: `class AgentGraph`, one typed method per query and mutation, and a `paginate…` method per
 * connection an operation can page through (an AsyncIterable of nodes, cancellable with an AbortSignal). A method
 * returns the runtime's APIPromise: awaited, the operation's data (the model); `.withResponse()`, the envelope.
 * Every call goes through the runtime's AgentGraphClient (retries, idempotency, privacy gate, typed errors).
 */
import type { IR, OperationIR } from '../ir.js';
import {
  dataType,
  HEADER,
  jsdoc,
  methodName,
  nodeType,
  paginateMethod,
  str,
  variablesType,
} from './names.js';

function origin(op: OperationIR): string {
  return op.origin.kind === 'curated'
    ? `\`${op.kind} ${op.name}\` from ${op.origin.file}.`
    : `\`${op.kind} ${op.name}\`, the default operation for ${op.origin.field}.`;
}

function idempotencyNote(op: OperationIR): string | undefined {
  if (op.idempotent) {
    return (
      'Idempotent: the SDK makes one key per call and resends it on every retry; pass `options.idempotencyKey` ' +
      '(a key you persisted) to repeat a logical call across restarts. `replayed` says the server answered ' +
      'with the stored result of an earlier attempt (`.withResponse()`).'
    );
  }
  if (op.kind === 'mutation') return 'Not idempotent: never retried.';
  return undefined;
}

function privacyNote(op: OperationIR): string | undefined {
  const entries = Object.entries(op.privacy);
  if (entries.length === 0) return undefined;
  return `Privacy gate: ${entries.map(([path, rule]) => `\`${path}\` ${rule.class}`).join(', ')}.`;
}

/** `variables` is optional when the operation has no required variable. */
function variablesParam(
  op: OperationIR,
  type: string,
  requiredNames = op.variables.filter((v) => v.required),
) {
  return requiredNames.length === 0 ? `variables: ${type} = {}` : `variables: ${type}`;
}

function method(op: OperationIR): string {
  const doc = jsdoc(
    [
      op.description,
      '',
      `Resolves to the operation's data; \`.withResponse()\` to the envelope (\`data\`, \`replayed\`, \`attempts\`, ` +
        '`idempotencyKey`, `extensions`, `response`).',
      origin(op),
      idempotencyNote(op),
      privacyNote(op),
      op.deprecationReason ? `@deprecated ${op.deprecationReason}` : undefined,
    ],
    '',
  );
  const data = `T.${dataType(op)}`;
  return (
    doc +
    `${methodName(op)}(${variablesParam(op, `T.${variablesType(op)}`)}, options?: CallOptions): ` +
    `APIPromise<${data}> {\n` +
    `return new APIPromise(this.client.execute<${data}>(operations.${op.name}, variables, options));\n}`
  );
}

function pagers(op: OperationIR): string[] {
  return op.connections.map((c) => {
    const required = op.variables.filter((v) => v.required && v.name !== c.afterVariable);
    const vars = `Omit<T.${variablesType(op)}, ${str(c.afterVariable)}>`;
    const node = `T.${nodeType(op, c)}`;
    const nullParent = c.nullable.slice(0, -1).some((n) => n)
      ? ` A null \`${c.path.slice(0, -1).join('.')}\` ends it with NotFoundError.`
      : '';
    const doc = jsdoc([
      `Every node of \`${c.path.join('.')}\` (${op.name}), page after page: \`${c.afterVariable}\` is set from ` +
        `each page's endCursor${c.firstVariable ? `, \`${c.firstVariable}\` is the page size` : ''}. The next ` +
        'page is fetched only when the loop has taken every node of the current one; aborting `options.signal` ' +
        `stops the loop with AbortError.${nullParent}`,
    ]);
    return (
      doc +
      `${paginateMethod(op, c)}(${variablesParam(op, vars, required)}, options: PageOptions = {}): AsyncIterable<${node}> {\n` +
      `return this.pages<${node}>(operations.${op.name}, variables, ${str(c.afterVariable)}, ` +
      `[${c.path.map(str).join(', ')}], options);\n}`
    );
  });
}

export function renderClient(ir: IR): string {
  const ops = ir.operations.filter((op) => op.kind !== 'subscription');
  const members = ops.flatMap((op) => [method(op), ...pagers(op)]);
  return `${HEADER}
import {
  AgentGraphClient,
  type AgentGraphClientOptions,
  APIPromise,
  type CallOptions,
  type Connection,
  type OperationSpec,
  paginate,
} from '@agentgraph/sdk-runtime';
import { errorTable } from './errors.js';
import { operations } from './operations.js';
import type * as T from './types.js';

/** AgentGraphClient's options, less the error table: the SDK brings schemas/errors.json itself. */
export type AgentGraphOptions = Omit<AgentGraphClientOptions, 'errorTable'>;

export interface PageOptions {
  /** Stops the loop (AbortError) and cancels the page request in flight. */
  signal?: AbortSignal;
  /** Per-attempt timeout of each page request. */
  timeoutMs?: number;
}

/** The connection at \`path\` in \`data\`; a null object on the way means the parent does not exist. */
function connectionAt(client: AgentGraphClient, operation: string, data: unknown, path: readonly string[]): Connection<unknown> {
  let value: unknown = data;
  for (const [i, step] of path.entries()) {
    value = (value as Record<string, unknown> | null | undefined)?.[step];
    if (value === null || value === undefined) {
      throw client.errors.create({
        code: 'NOT_FOUND',
        retryable: false,
        message: \`\${operation}: \${path.slice(0, i + 1).join('.')} is null (it does not exist or is not visible to the caller), so there is nothing to page through.\`,
      });
    }
  }
  return value as Connection<unknown>;
}

/**
 * The AgentGraph API, one typed method per query and mutation (${ops.length} of them). Subscriptions are in
 * \`subscriptions\` (operations.ts), for the runtime's stream client (\`createSubscriptions\`).
 */
export class AgentGraph {
  /** The runtime client every method goes through: settings, capabilities, execute() for your own documents. */
  readonly client: AgentGraphClient;

  constructor(options: AgentGraphOptions | AgentGraphClient) {
    this.client = options instanceof AgentGraphClient ? options : new AgentGraphClient({ ...options, errorTable });
  }

${members.join('\n\n')}

  private pages<TNode>(
    op: OperationSpec,
    variables: Record<string, unknown>,
    afterVariable: string,
    path: readonly string[],
    options: PageOptions,
  ): AsyncIterable<TNode> {
    return paginate<TNode>(
      async (after, signal) => {
        const vars = after === undefined ? variables : { ...variables, [afterVariable]: after };
        const { data } = await this.client.execute(op, vars, {
          ...(signal ? { signal } : {}),
          ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        });
        return connectionAt(this.client, op.name, data, path) as Connection<TNode>;
      },
      options.signal ? { signal: options.signal } : {},
    );
  }
}
`;
}
