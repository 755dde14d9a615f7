import { expect, it } from 'vitest';
import type { OperationSpec } from '../../src/client.js';
import { sendWithClient, type OutboxEntry } from '../../src/outbox/index.js';

const entry = (operation: string): OutboxEntry => ({
  id: 'e-1',
  seq: 1,
  room: 'r',
  operation,
  variables: { body: 'hi' },
  idempotencyKey: 'key-1',
  state: 'SENDING',
  attempts: 1,
  failedDeliveries: 0,
  nextAttemptAt: null,
  lastError: null,
  createdAt: 0,
  updatedAt: 0,
  expiresAt: 1,
  firstAttemptAt: 0,
});

const op = (kind: 'query' | 'mutation', idempotent: boolean): OperationSpec => ({
  name: 'PostMessage',
  document: 'mutation PostMessage { x }',
  kind,
  idempotent,
  privacy: {},
});

it('sendWithClient calls execute with the entry variables, its persisted key and the signal', async () => {
  const calls: unknown[] = [];
  const client = {
    execute: async (o: OperationSpec, variables: Record<string, unknown>, options: unknown) => {
      calls.push([o.name, variables, options]);
      return { data: { ok: true } } as any;
    },
  };
  const signal = new AbortController().signal;
  const send = sendWithClient(client, { PostMessage: op('mutation', true) });
  expect(await send(entry('PostMessage'), signal)).toEqual({ ok: true });
  expect(calls).toEqual([['PostMessage', { body: 'hi' }, { signal, idempotencyKey: 'key-1' }]]);
});

it('sendWithClient refuses, without retry, an unknown operation or one that is not an idempotent mutation', async () => {
  const client = { execute: async () => ({ data: null }) as any };
  const signal = new AbortController().signal;
  const send = sendWithClient(client, (name) => (name === 'Query' ? op('query', false) : undefined));
  await expect(send(entry('Nope'), signal)).rejects.toMatchObject({
    code: 'OUTBOX_UNKNOWN_OPERATION',
    retryable: false,
    message: expect.stringContaining('no operation named Nope'),
  });
  await expect(send(entry('Query'), signal)).rejects.toMatchObject({
    retryable: false,
    message: expect.stringContaining('not an idempotent mutation'),
  });
});
