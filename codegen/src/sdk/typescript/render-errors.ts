/**
 * src/errors.ts: the error-code table (schemas/errors.json) the client is built with, and one class per code.
 *
 * The runtime makes its own subclass per code inside each client (ErrorRegistry), so a class exported here is not
 * the one an error was constructed with. Each exported class therefore answers `instanceof` by code
 * (`Symbol.hasInstance`): `err instanceof RateLimitedError` is true for every AgentGraphError whose code is
 * RATE_LIMITED, whichever client threw it, and TypeScript narrows `err` to the class.
 */
import type { IR } from '../ir.js';
import { HEADER, jsdoc, str } from './names.js';

/** `RATE_LIMITED` → `RateLimitedError`: the runtime's errorClassName, so both name a code's class alike. */
export function errorClassName(code: string): string {
  const pascal = code
    .toLowerCase()
    .split('_')
    .filter((part) => part.length > 0)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');
  return `${pascal}Error`;
}

/** The retry classes the runtime knows (sdk-templates/typescript/src/errors.ts RetryClass). */
export const RUNTIME_RETRY_CLASSES: readonly string[] = [
  'never',
  'refresh-once',
  'backoff',
  'after',
  'resend-document',
];

/**
 * A retry class the runtime does not know is kept as written (the data is the table's), typed with a cast and a
 * comment: the runtime retries only `backoff` and `after`, so it treats an unknown class as `never`.
 */
function retryLiteral(retry: string): string {
  if (RUNTIME_RETRY_CLASSES.includes(retry)) return str(retry);
  return `/* not a RetryClass of this runtime, which does not retry it */ ${str(retry)} as RetryClass`;
}

export function renderErrors(ir: IR): string {
  const table = ir.errors
    .map(
      (e) =>
        `{ code: ${str(e.code)}, http: ${e.http}, retry: ${retryLiteral(e.retry)}, description: ${str(e.description)} },`,
    )
    .join('\n');
  const classes = ir.errors.map((e) => {
    const name = errorClassName(e.code);
    return (
      jsdoc([e.description, '', `HTTP ${e.http}; retry: ${e.retry}.`]) +
      `export class ${name} extends AgentGraphError {\n` +
      `static readonly code = ${str(e.code)};\n` +
      `static readonly http = ${e.http};\n` +
      `static readonly retry = ${str(e.retry)};\n` +
      `/** Any AgentGraphError with code ${e.code}, whichever client made it. */\n` +
      `static override [Symbol.hasInstance](value: unknown): value is ${name} {\n` +
      `return value instanceof AgentGraphError && value.code === ${str(e.code)};\n` +
      `}\n` +
      `}`
    );
  });
  return [
    HEADER,
    "import { AgentGraphError, type ErrorTable, type RetryClass } from '@agentgraph/sdk-runtime';",
    '',
    '/** schemas/errors.json: the codes the server answers with, how each is retried. */',
    `export const errorTable: ErrorTable = {\ncodes: [\n${table}\n],\n};`,
    '',
    `export type ErrorCode = ${ir.errors.map((e) => str(e.code)).join(' | ')};`,
    '',
    classes.join('\n\n'),
    '',
    '/** The class of each code. */',
    `export const errorClasses = {\n${ir.errors.map((e) => `${e.code}: ${errorClassName(e.code)},`).join('\n')}\n} as const;`,
    '',
  ].join('\n');
}
