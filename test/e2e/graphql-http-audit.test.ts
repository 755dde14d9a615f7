/**
 * The GraphQL-over-HTTP audit (graphql-http's serverAudits, the spec's MUST, SHOULD and MAY checks) against the
 * gateway's /graphql and every subgraph's, over real HTTP with a member's token. No MUST and no SHOULD may fail.
 */
import { auditServer, type AuditResult } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';

let p: TestPlatform;
let user: TestUser;

beforeAll(async () => {
  p = await startTestPlatform();
  user = await p.tokenFor({ tenant: 'audit' });
});
afterAll(async () => {
  await p?.close();
});

/** fetch with the member's token on every request the audit makes (the API needs one for any operation). */
const withToken: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${user.token}`);
  return fetch(input, { ...init, headers });
};

/** What failed, MAY audits aside (warn = a SHOULD, error = a MUST). */
function failures(results: AuditResult[]): string[] {
  return results
    .filter((r) => r.status !== 'ok' && !r.name.startsWith('MAY'))
    .map((r) => `${r.id} ${r.name}: ${r.status === 'error' || r.status === 'warn' ? r.reason : ''}`);
}

describe('GraphQL over HTTP (graphql-http serverAudits)', () => {
  it('the gateway: no MUST or SHOULD fails', async () => {
    const results = await auditServer({ url: `${p.gatewayUrl}/graphql`, fetchFn: withToken });
    expect(results.length).toBeGreaterThan(40);
    expect(failures(results)).toEqual([]);
  });
  for (const name of ['identity', 'memory', 'coordination', 'catalog'] as const) {
    it(`the ${name} subgraph: no MUST or SHOULD fails`, async () => {
      const results = await auditServer({ url: `${p.subgraphs[name]}/graphql`, fetchFn: withToken });
      expect(results.length).toBeGreaterThan(40);
      expect(failures(results)).toEqual([]);
    });
  }
});

/**
 * The statuses behind the audit, spelled out: a document that does not parse or validate, or variables that do not
 * coerce, are 200 for a client accepting only application/json and 400 for one accepting
 * application/graphql-response+json (every SDK); a body that is not JSON is 400 for both; a POST without
 * Content-Type runs nothing (415).
 */
describe('status of request errors by Accept', () => {
  const cases: [string, string][] = [
    ['{', 'GRAPHQL_PARSE_FAILED'],
    ['{ noSuchField }', 'GRAPHQL_VALIDATION_FAILED'],
    ['query Q($n: Int!) { __typename }', 'GRAPHQL_VALIDATION_FAILED'],
  ];
  const post = (url: string, accept: string, body: string) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept, authorization: `Bearer ${user.token}` },
      body,
    });
  for (const target of ['gateway', 'memory'] as const) {
    const url = () => (target === 'gateway' ? `${p.gatewayUrl}/graphql` : `${p.subgraphs.memory}/graphql`);
    it(`${target}: document errors are 200 with application/json, 400 with application/graphql-response+json`, async () => {
      for (const [query, code] of cases) {
        for (const [accept, status, type] of [
          ['application/json', 200, 'application/json'],
          [
            'application/graphql-response+json, application/json;q=0.9',
            400,
            'application/graphql-response+json',
          ],
        ] as const) {
          const res = await post(url(), accept, JSON.stringify({ query }));
          expect([query, accept, res.status]).toEqual([query, accept, status]);
          expect(res.headers.get('content-type')).toContain(type);
          const body = (await res.json()) as { data?: unknown; errors: { extensions: { code: string } }[] };
          expect(body.data).toBeUndefined();
          expect(body.errors[0]!.extensions.code).toBe(code);
        }
      }
      // Variables that do not coerce (a Boolean given a string).
      for (const [accept, status] of [
        ['application/json', 200],
        ['application/graphql-response+json', 400],
      ] as const) {
        const res = await post(
          url(),
          accept,
          JSON.stringify({
            query: 'query Q($b: Boolean!) { __typename @include(if: $b) }',
            variables: { b: 'x' },
          }),
        );
        expect([accept, res.status]).toEqual([accept, status]);
        const body = (await res.json()) as { data?: unknown; errors: { extensions: { code: string } }[] };
        expect(body.data).toBeUndefined();
        expect(body.errors[0]!.extensions.code).toBe('BAD_USER_INPUT');
      }
      // A body that is not JSON: 400 whatever the client accepts.
      for (const accept of ['application/json', 'application/graphql-response+json']) {
        expect((await post(url(), accept, '{"query": ')).status).toBe(400);
      }
    });
  }
});

/** A stream without a valid token is refused before it opens, with the same 401 at the gateway and every subgraph. */
describe('streams without a token', () => {
  const SUBSCRIBE = JSON.stringify({ query: 'subscription { deviceIntents { seq } }' });
  const targets = () => ({
    gateway: p.gatewayUrl,
    identity: p.subgraphs.identity,
    memory: p.subgraphs.memory,
    coordination: p.subgraphs.coordination,
    catalog: p.subgraphs.catalog,
  });
  it('answers 401 UNAUTHENTICATED, as JSON, for a missing or a forged token', async () => {
    for (const [name, base] of Object.entries(targets())) {
      for (const authorization of [undefined, 'Bearer not-a-token']) {
        const res = await fetch(`${base}/graphql/stream`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'text/event-stream',
            ...(authorization ? { authorization } : {}),
          },
          body: SUBSCRIBE,
        });
        expect([name, authorization, res.status]).toEqual([name, authorization, 401]);
        expect(res.headers.get('content-type')).toContain('json');
        const body = (await res.json()) as { errors: { extensions: { code: string } }[] };
        expect(body.errors[0]!.extensions.code).toBe('UNAUTHENTICATED');
      }
    }
  });
});
