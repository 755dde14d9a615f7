import { describe, expect, it } from 'vitest';
import { AgentGraphError, ErrorRegistry, errorClassName, errorFromAnswer } from '../src/index.js';
import { errorTable } from './helpers.js';

const registry = new ErrorRegistry(errorTable);
const answer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  errorFromAnswer(registry, { status, headers: new Headers(headers), body }, 0);

describe('typed errors from the error table', () => {
  it('makes one named subclass per code', () => {
    expect(errorClassName('IDEMPOTENCY_KEY_IN_PROGRESS')).toBe('IdempotencyKeyInProgressError');
    for (const { code } of errorTable.codes) {
      const cls = registry.classFor(code);
      expect(cls.name).toBe(errorClassName(code));
      const err = registry.create({ code, message: 'm', retryable: false });
      expect(err).toBeInstanceOf(cls);
      expect(err).toBeInstanceOf(AgentGraphError);
      expect(err.name).toBe(cls.name);
    }
    expect(registry.classFor('SOMETHING_NEW')).toBe(AgentGraphError);
  });

  it('classifies every table code by its retry column', () => {
    for (const { code, http, retry } of errorTable.codes) {
      const err = answer(http, { errors: [{ message: 'x', extensions: { code } }] });
      expect(err.code).toBe(code);
      expect(err.retryable, code).toBe(retry === 'backoff' || retry === 'after');
    }
  });

  it('maps a bare status to its one table code, and ambiguous statuses to HTTP_ERROR', () => {
    expect(answer(503, undefined).code).toBe('SERVICE_UNAVAILABLE');
    expect(answer(429, undefined).code).toBe('RATE_LIMITED');
    expect(answer(409, undefined)).toMatchObject({ code: 'HTTP_ERROR', retryable: false });
    expect(answer(400, undefined)).toMatchObject({ code: 'HTTP_ERROR', retryable: false });
    expect(answer(504, undefined)).toMatchObject({ code: 'HTTP_ERROR', retryable: true });
  });

  it('is retryable only when every error is', () => {
    const err = answer(200, {
      data: { a: null, b: null },
      errors: [
        { message: 'x', extensions: { code: 'INTERNAL_SERVER_ERROR' } },
        { message: 'y', extensions: { code: 'VERSION_CONFLICT' } },
      ],
    });
    expect(err).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', retryable: false, errors: { length: 2 } });
  });

  it('an uncoded error in a 200 is GRAPHQL_ERROR, not retried; its path and partial data are kept', () => {
    const err = answer(200, { data: { a: 1 }, errors: [{ message: 'x', path: ['b'] }] });
    expect(err).toMatchObject({ code: 'GRAPHQL_ERROR', retryable: false, path: ['b'], data: { a: 1 } });
  });
});
