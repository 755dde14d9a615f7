import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.js';

describe('introspection off (INTROSPECTION=false)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ INTROSPECTION: 'false' });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses schema introspection with 400 GRAPHQL_VALIDATION_FAILED, serves the rest', async () => {
    const r = await h.gql('{ __schema { types { name } } }');
    expect(r.status).toBe(400);
    expect(r.json.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const ok = await h.gql('{ things(first: 1) { id __typename } }');
    expect(ok.status).toBe(200);
  });
});

describe('introspection on (development default)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('answers schema introspection from the API schema (no join__ internals)', async () => {
    const r = await h.gql('{ __schema { types { name } } }');
    expect(r.status).toBe(200);
    const names = (r.json.data.__schema.types as Array<{ name: string }>).map((t) => t.name);
    expect(names).toContain('Thing');
    expect(names.some((n) => n.startsWith('join__') || n.startsWith('link__'))).toBe(false);
  });
});
