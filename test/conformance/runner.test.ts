/**
 * The TypeScript runner of the language-neutral conformance vectors (README.md): one test per vector file. A vector
 * must validate against vector.schema.json (and against its executor's own `schema`, if it exports one), its `id`
 * must equal its file name, and the executor for its `kind` (ts/<kind>.ts) must reproduce it exactly.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Executor, VectorEnvelope } from './ts/executor.js';
import { FakeClock } from './ts/fake-clock.js';
import { scriptedRandom } from './ts/scripted-random.js';

const vectorsDir = new URL('./vectors/', import.meta.url);
const envelopeSchema = z.fromJSONSchema(
  JSON.parse(readFileSync(new URL('./vector.schema.json', import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >,
);
const files = readdirSync(vectorsDir)
  .filter((f) => f.endsWith('.json'))
  .sort();

interface ExecutorModule {
  executor?: Executor;
  schema?: Record<string, unknown>;
}

async function executorFor(kind: string): Promise<ExecutorModule> {
  const url = new URL(`./ts/${kind}.ts`, import.meta.url);
  if (!existsSync(url))
    throw new Error(`no executor for kind "${kind}": test/conformance/ts/${kind}.ts is missing`);
  return (await import(url.href)) as ExecutorModule;
}

function validate(schema: z.ZodType, vector: unknown, file: string, what: string): void {
  const result = schema.safeParse(vector);
  if (!result.success)
    throw new Error(`${file} does not validate against ${what}:\n${z.prettifyError(result.error)}`);
}

describe('conformance vectors', () => {
  it('the suite has vectors', () => {
    expect(files.length).toBeGreaterThanOrEqual(30);
  });

  it('the schema rejects malformed vectors', () => {
    const good = JSON.parse(readFileSync(new URL('call-query-success.json', vectorsDir), 'utf8')) as Record<
      string,
      any
    >;
    expect(envelopeSchema.safeParse(good).success).toBe(true);
    const broken: Record<string, unknown>[] = [
      { ...good, kind: 'calls' },
      { ...good, unknownField: 1 },
      { ...good, random: [1] },
      { ...good, id: 'Not An Id' },
      { ...good, expect: { outcome: good.expect.outcome } },
      {
        ...good,
        exchanges: [{ request: { headers: { 'Idempotency-Key': 'k' } }, response: { status: 200 } }],
      },
      { ...good, exchanges: [{ request: {}, response: { fault: 'dns' } }] },
      { ...good, operation: { ...good.operation, kind: 'subscription' } },
    ];
    for (const vector of broken)
      expect(envelopeSchema.safeParse(vector).success, JSON.stringify(vector)).toBe(false);
  });

  for (const file of files) {
    it(file, async () => {
      const vector = JSON.parse(readFileSync(new URL(file, vectorsDir), 'utf8')) as VectorEnvelope;
      validate(envelopeSchema, vector, file, 'vector.schema.json');
      expect(vector.id, 'a vector id equals its file name').toBe(file.replace(/\.json$/, ''));
      const mod = await executorFor(vector.kind);
      if (!mod.executor || mod.executor.kind !== vector.kind) {
        throw new Error(`ts/${vector.kind}.ts must export executor with kind "${vector.kind}"`);
      }
      if (mod.schema)
        validate(z.fromJSONSchema(mod.schema), vector, file, `the schema of ts/${vector.kind}.ts`);
      const clock = new FakeClock(vector.clock?.start);
      const random = scriptedRandom(vector.random ?? [], file);
      await mod.executor.run(vector, { file, clock, random });
    });
  }
});
