import { describe, expect, it } from 'vitest';
import {
  correlationIdFrom,
  createLogger,
  currentCorrelationId,
  withCorrelationId,
  type LoggerOptions,
} from '../src/log.js';

const fixedNow = () => new Date('2030-01-01T00:00:00.000Z');

function capture(opts: Omit<LoggerOptions, 'write'> = {}) {
  const lines: string[] = [];
  const records = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { lines, records, opts: { now: fixedNow, ...opts, write: (l: string) => lines.push(l) } };
}

describe('createLogger', () => {
  it('writes one JSON object per line with time, level, message and fields', () => {
    const c = capture();
    createLogger({ service: 'memory' }, c.opts).info('started', { port: 4102 });
    expect(c.lines).toHaveLength(1);
    expect(c.lines[0]).not.toContain('\n');
    expect(c.records()[0]).toEqual({
      time: '2030-01-01T00:00:00.000Z',
      level: 'info',
      msg: 'started',
      service: 'memory',
      port: 4102,
    });
  });

  it('drops lines below its level', () => {
    const c = capture({ level: 'warn' });
    const log = createLogger({}, c.opts);
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error('e');
    expect(c.records().map((r) => r['level'])).toEqual(['warn', 'error']);
  });

  it.each([
    'authorization',
    'Authorization',
    'accessToken',
    'refresh_token',
    'idempotencyKey',
    'idempotency-key',
    'clientSecret',
    'password',
    'cookie',
    'apiKey',
    'privateKey',
    'credentials',
  ])('redacts the value of a %s field', (field) => {
    const c = capture();
    createLogger({}, c.opts).info('request', { [field]: 'Bearer eyJhbGciOi.secret.value' });
    expect(c.records()[0]![field]).toBe('[redacted]');
    expect(c.lines[0]).not.toContain('secret.value');
  });

  it('redacts nested fields, fields in arrays and base fields, and keeps the rest', () => {
    const c = capture();
    const log = createLogger({ service: 'gateway', token: 'base-token' }, c.opts).child({
      apiKey: 'child-key',
    });
    log.info('forwarding', {
      headers: { authorization: 'Bearer abc', 'x-correlation-id': 'c-1' },
      attempts: [{ idempotencyKey: 'k-123', status: 200 }],
      subgraph: 'memory',
    });
    const r = c.records()[0]!;
    expect(r).toMatchObject({
      service: 'gateway',
      token: '[redacted]',
      apiKey: '[redacted]',
      headers: { authorization: '[redacted]', 'x-correlation-id': 'c-1' },
      attempts: [{ idempotencyKey: '[redacted]', status: 200 }],
      subgraph: 'memory',
    });
    for (const leaked of ['base-token', 'child-key', 'Bearer abc', 'k-123'])
      expect(c.lines[0]).not.toContain(leaked);
  });

  it('cuts objects nested too deep instead of writing them unredacted', () => {
    const c = capture();
    const deep = { a: { b: { c: { d: { e: { f: { g: { authorization: 'Bearer deep-secret' } } } } } } } };
    createLogger({}, c.opts).info('deep', deep);
    expect(c.lines[0]).not.toContain('deep-secret');
    expect(c.lines[0]).toContain('[truncated]');
  });

  it('does not throw on a cyclic value', () => {
    const c = capture();
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic['self'] = cyclic;
    expect(() => createLogger({}, c.opts).warn('cycle', { cyclic })).not.toThrow();
    expect(c.records()[0]).toMatchObject({ msg: 'cycle', cyclic: { name: 'loop' } });
  });

  it('logs errors with name, message and stack', () => {
    const c = capture();
    createLogger({}, c.opts).error('failed', { error: new TypeError('bad thing') });
    expect(c.records()[0]!['error']).toMatchObject({ name: 'TypeError', message: 'bad thing' });
    expect(String((c.records()[0]!['error'] as { stack: string }).stack)).toContain('TypeError: bad thing');
  });
});

describe('correlation ids', () => {
  it('adds the correlation id of the current request to every line', async () => {
    const c = capture();
    const log = createLogger({ service: 'memory' }, c.opts);
    log.info('outside');
    await withCorrelationId('req-1', async () => {
      await Promise.resolve();
      log.info('inside');
      expect(currentCorrelationId()).toBe('req-1');
      await withCorrelationId('req-2', async () => log.child({ step: 2 }).warn('nested'));
    });
    const [outside, inside, nested] = c.records();
    expect(outside).not.toHaveProperty('correlationId');
    expect(inside).toMatchObject({ msg: 'inside', correlationId: 'req-1' });
    expect(nested).toMatchObject({ msg: 'nested', correlationId: 'req-2', step: 2 });
    expect(currentCorrelationId()).toBeUndefined();
  });

  it('keeps concurrent requests apart', async () => {
    const c = capture();
    const log = createLogger({}, c.opts);
    await Promise.all(
      ['a', 'b', 'c'].map((id) =>
        withCorrelationId(id, async () => {
          await new Promise<void>((r) => setImmediate(r));
          log.info(id);
        }),
      ),
    );
    for (const r of c.records()) expect(r['correlationId']).toBe(r['msg']);
  });

  it('takes a well-formed client correlation id and replaces anything else', () => {
    expect(correlationIdFrom('abc-123_X.y:z')).toBe('abc-123_X.y:z');
    expect(correlationIdFrom(['first-id', 'second'])).toBe('first-id');
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    for (const bad of [undefined, '', 'has space', 'line\nbreak', 'x'.repeat(65), '"quoted"']) {
      expect(correlationIdFrom(bad)).toMatch(uuid);
    }
  });
});
