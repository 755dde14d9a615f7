import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../src/canonical-json.js';
import {
  AppError,
  badInput,
  errorTable,
  httpStatusOf,
  isClientCode,
  maskedError,
  notFound,
  type ErrorCode,
} from '../src/errors.js';

// docs/architecture.md#error-codes and the client-SDK retry classes: the status each code must answer with.
const expected: Record<ErrorCode, number> = {
  BAD_USER_INPUT: 400,
  GRAPHQL_PARSE_FAILED: 400,
  GRAPHQL_VALIDATION_FAILED: 400,
  QUERY_TOO_COMPLEX: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  PAYLOAD_TOO_LARGE: 413,
  IDEMPOTENCY_KEY_REUSED: 422,
  VERSION_CONFLICT: 409,
  IDEMPOTENCY_KEY_IN_PROGRESS: 409,
  RATE_LIMITED: 429,
  INTERNAL_SERVER_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  PERSISTED_QUERY_NOT_FOUND: 200,
  OPERATION_NOT_TRUSTED: 400,
  EMERGENCY_STOP: 423,
};

describe('error table', () => {
  it('loads schemas/errors.json, one entry per code', () => {
    const raw = JSON.parse(readFileSync(new URL('../../schemas/errors.json', import.meta.url), 'utf8')) as {
      codes: unknown[];
    };
    expect(errorTable.length).toBe(raw.codes.length);
    const codes = errorTable.map((e) => e.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const e of errorTable) expect(e.description.length).toBeGreaterThan(10);
  });

  it.each(Object.entries(expected))('maps %s to HTTP %i', (code, status) => {
    expect(httpStatusOf(code)).toBe(status);
    expect(errorTable.find((e) => e.code === code)?.http).toBe(status);
  });

  it('maps every code in the table to its own status', () => {
    for (const e of errorTable) expect(httpStatusOf(e.code)).toBe(e.http);
  });

  it('answers 500 for a code it does not know', () => {
    expect(httpStatusOf('NO_SUCH_CODE')).toBe(500);
  });

  it('marks only the transient codes as retryable', () => {
    for (const e of errorTable) {
      const transient =
        e.http === 408 || e.http === 429 || e.http >= 500 || e.code === 'IDEMPOTENCY_KEY_IN_PROGRESS';
      if (e.code === 'UNAUTHENTICATED') expect(e.retry).toBe('refresh-once');
      else if (e.code === 'PERSISTED_QUERY_NOT_FOUND') expect(e.retry).toBe('resend-document');
      else expect(e.retry === 'never', e.code).toBe(!transient);
    }
  });

  it('puts the code in the extensions of AppError and its helpers', () => {
    const e = new AppError('RATE_LIMITED', 'slow down', { retryAfterMs: 1000 });
    expect(e.code).toBe('RATE_LIMITED');
    expect(e.extensions).toEqual({ retryAfterMs: 1000, code: 'RATE_LIMITED' });
    expect(e.toJSON()).toMatchObject({ message: 'slow down', extensions: { code: 'RATE_LIMITED' } });
    expect(badInput('bad', { argument: 'first' }).extensions).toEqual({
      argument: 'first',
      code: 'BAD_USER_INPUT',
    });
    expect(notFound('Room').code).toBe('NOT_FOUND');
  });

  it('does not let extensions override the code', () => {
    expect(new AppError('FORBIDDEN', 'no', { code: 'OTHER' }).extensions['code']).toBe('FORBIDDEN');
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every level and adds no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, 2], c: 'x' } })).toBe('{"a":{"c":"x","d":[1,2]},"b":1}');
  });

  it('gives the same text for the same value whatever the key order', () => {
    const a = { title: 't', tags: ['x', 'y'], meta: { z: null, y: true } };
    const b = { meta: { y: true, z: null }, tags: ['x', 'y'], title: 't' };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
  });

  it('keeps array order, drops undefined properties, writes undefined array items as null', () => {
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('writes dates as ISO strings and escapes strings like JSON', () => {
    expect(canonicalJson({ at: new Date('2030-01-02T03:04:05.000Z') })).toBe(
      '{"at":"2030-01-02T03:04:05.000Z"}',
    );
    expect(canonicalJson('a"b\n')).toBe('"a\\"b\\n"');
    expect(canonicalJson({ 'k"': 1 })).toBe('{"k\\"":1}');
  });

  it('refuses non-finite numbers', () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson([Infinity])).toThrow(TypeError);
  });

  it('distinguishes values JSON distinguishes', () => {
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: '1' }));
    expect(canonicalJson({ a: null })).not.toBe(canonicalJson({}));
  });
});

describe('masking (one shape for the subgraph server, the gateway and its streams)', () => {
  it('lets a client see every code of the table but INTERNAL_SERVER_ERROR, and nothing else', () => {
    for (const { code } of errorTable) expect(isClientCode(code)).toBe(code !== 'INTERNAL_SERVER_ERROR');
    for (const other of [undefined, 42, 'DOWNSTREAM_SERVICE_ERROR', 'BAD_REQUEST', 'bad_user_input'])
      expect(isClientCode(other)).toBe(false);
  });

  it('masks with what to do and the correlation id, keeping only path and locations', () => {
    expect(maskedError('c-1', { path: ['a', 0], locations: [{ line: 1, column: 3 }] })).toEqual({
      message: 'Internal server error. Retry later; if it persists, report correlation id c-1.',
      path: ['a', 0],
      locations: [{ line: 1, column: 3 }],
      extensions: { code: 'INTERNAL_SERVER_ERROR', correlationId: 'c-1' },
    });
    expect(maskedError(undefined, {}, 'Reconnect')).toEqual({
      message: 'Internal server error. Reconnect; if it persists, report correlation id n/a.',
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
  });
});
