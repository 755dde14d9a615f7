/**
 * JSON logs, one object per line, with the correlation id of the request that caused them.
 * Keys that look like credentials are redacted whatever their value; never log tokens or idempotency keys.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { writeSync } from 'node:fs';
import { activeTraceIds } from './telemetry/tracing.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const levelRank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

interface RequestScope {
  correlationId: string;
}
const scope = new AsyncLocalStorage<RequestScope>();

const CORRELATION_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** A client-supplied correlation id if it is well-formed, else a new one. */
export function correlationIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value && CORRELATION_ID.test(value) ? value : randomUUID();
}

export function withCorrelationId<T>(correlationId: string, fn: () => T): T {
  return scope.run({ correlationId }, fn);
}

export function currentCorrelationId(): string | undefined {
  return scope.getStore()?.correlationId;
}

const SENSITIVE_KEY =
  /(authorization|token|secret|password|passwd|cookie|idempotency.?key|api.?key|private.?key|credential)/i;

function redact(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  // Deeper objects are cut, not passed through: unredacted they could leak a credential, and a cycle would
  // make JSON.stringify (and so the log call) throw.
  if (depth > 6) return '[truncated]';
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SENSITIVE_KEY.test(k) ? '[redacted]' : redact(v, depth + 1);
  }
  return out;
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go; stdout by default. Tests pass an array's push. */
  write?: (line: string) => void;
  now?: () => Date;
}

/**
 * Standard output, written once per turn of the event loop: a busy server logs a line per request, and on a pipe
 * every write is a system call. Lines still pending when the process exits are written synchronously.
 */
let pending: string[] = [];
let exitHookInstalled = false;
function flushStdout(): void {
  if (pending.length === 0) return;
  const text = pending.join('');
  pending = [];
  process.stdout.write(text);
}
function writeStdout(line: string): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      if (pending.length) writeSync(1, pending.join(''));
      pending = [];
    });
  }
  if (pending.length === 0) setImmediate(flushStdout);
  pending.push(line + '\n');
}

export function createLogger(base: Record<string, unknown>, opts: LoggerOptions = {}): Logger {
  const min = levelRank[opts.level ?? 'info'];
  const write = opts.write ?? writeStdout;
  const now = opts.now ?? (() => new Date());
  const emit = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (levelRank[level] < min) return;
    const correlationId = currentCorrelationId();
    const record = {
      time: now().toISOString(),
      level,
      msg,
      ...(redact(base) as object),
      ...(correlationId ? { correlationId } : {}),
      // trace_id/span_id of the active span when tracing is on (telemetry/tracing.ts); a flag check when off.
      ...activeTraceIds(),
      ...(fields ? (redact(fields) as object) : {}),
    };
    write(JSON.stringify(record));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({ ...base, ...fields }, opts),
  };
}
