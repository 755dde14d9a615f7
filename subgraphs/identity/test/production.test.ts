/** A production-mode identity subgraph has no /dev/token route at all. */
import { createLogger } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_TOKEN_PATH, identityRoutes, JWKS_PATH } from '../src/index.js';
import { startIdentity, type Harness } from './harness.js';

let h: Harness;

beforeAll(async () => {
  // loadConfig insists on DATABASE_URL in production; the mode is what matters to the routes, so flip it after.
  h = await startIdentity({}, (c) => ({ ...c, mode: 'production', introspection: false }));
});
afterAll(async () => h?.close());

describe('production mode', () => {
  it('does not mount /dev/token', async () => {
    const routes = identityRoutes({
      config: h.config,
      db: h.db,
      log: createLogger({}, { write: () => undefined }),
    });
    expect(Object.keys(routes)).toContain(JWKS_PATH);
    expect(Object.keys(routes)).not.toContain(DEV_TOKEN_PATH);
    const res = await fetch(`${h.url}${DEV_TOKEN_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'ada@acme.test' }),
    });
    expect(res.status).toBe(404);
  });

  it('still serves the JWKS and verifies tokens', async () => {
    expect((await fetch(`${h.url}${JWKS_PATH}`)).status).toBe(200);
    const m = await h.tenant('Prod', 'ops@prod.test');
    const a = await h.gql(`query { viewer { tenant { name } } }`, {}, m.token);
    expect(a.body.data.viewer.tenant.name).toBe('Prod');
  });
});
