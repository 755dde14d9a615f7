import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { AppError } from '../src/errors.js';
import { createLogger } from '../src/log.js';
import { formatError } from '../src/subgraph-server.js';

describe('formatError', () => {
  const lines: string[] = [];
  const log = createLogger({}, { write: (l) => lines.push(l) });

  it('keeps the code and message of an AppError thrown by a resolver', () => {
    const err = new GraphQLError('wrapped', {
      originalError: new AppError('NOT_FOUND', 'Room x was not found.'),
    });
    const wrapped = new GraphQLError('Room x was not found.', {
      originalError: err.originalError!,
      extensions: { code: 'NOT_FOUND' },
    });
    expect(formatError(wrapped, log, 'cid').extensions?.['code']).toBe('NOT_FOUND');
  });

  it('codes an execution error of graphql-js itself (null for a non-null field) as INTERNAL_SERVER_ERROR', () => {
    const err = new GraphQLError('Cannot return null for non-nullable field Room.name.', {
      path: ['room', 'name'],
    });
    expect(formatError(err, log, 'cid').extensions?.['code']).toBe('INTERNAL_SERVER_ERROR');
  });

  it('masks an unexpected error, names the correlation id and logs it', () => {
    lines.length = 0;
    const err = new GraphQLError('boom', {
      originalError: new Error('connection string postgres://u:secret@h/db'),
    });
    const out = formatError(err, log, 'cid-42');
    expect(out.extensions?.['code']).toBe('INTERNAL_SERVER_ERROR');
    expect(out.message).toContain('cid-42');
    expect(out.message).not.toContain('secret');
    expect(lines.some((l) => l.includes('resolver failed'))).toBe(true);
  });
});
