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
    const r = await h.gql('{ __schema { types { name } } }', undefined, undefined, {
      accept: 'application/graphql-response+json',
    });
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

describe('production mode', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      AGENTGRAPH_MODE: 'production',
      // Required by loadConfig in production; the harness's stub subgraphs use no database.
      DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused',
      CURSOR_SECRET: 'c'.repeat(32),
      COOKIE_SECRET: 'k'.repeat(32),
      GATEWAY_SECRET: 'g'.repeat(32),
      KEY_ENCRYPTION_KEYS: Buffer.alloc(32, 7).toString('base64'),
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('gives no "Did you mean" suggestions on /graphql or /graphql/stream', async () => {
    const r = await h.gql('{ things(first: 1) { nmae } }', undefined, undefined, {
      accept: 'application/graphql-response+json',
    });
    expect(r.status).toBe(400);
    expect(r.json.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(JSON.stringify(r.json)).not.toMatch(/Did you mean|"name"/);
    const res = await fetch(`${h.url}/graphql/stream`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${await h.token()}`,
      },
      body: JSON.stringify({ query: 'subscription { ticks { nn } }' }),
    });
    const text = await res.text();
    expect(res.status).toBe(400);
    expect(text).toContain('GRAPHQL_VALIDATION_FAILED');
    expect(text).toContain('Cannot query field');
    expect(text).not.toMatch(/Did you mean|"n"/);
    // Federated fields still resolve (detail comes from beta through _entities, with the gateway secret).
    const ok = await h.gql('{ things(first: 1) { id name detail } }');
    expect(ok.status).toBe(200);
    expect(ok.json.errors).toBeUndefined();
    expect(ok.json.data.things[0].detail).toEqual(expect.any(String));
  });
});
