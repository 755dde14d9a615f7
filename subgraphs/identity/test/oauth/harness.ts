/**
 * Identity served on a real loopback port whose URL is also the token issuer (OAuth clients discover the issuer by
 * URL and check it), on a fresh test database, with helpers for the OAuth tests: members, a device key pair, and a
 * token verifier that consults the revocation list like every other service.
 */
import {
  createLogger,
  createRevocationList,
  createTokenVerifier,
  loadConfig,
  openDatabase,
  serveSubgraph,
  withTenant,
  type AuthContext,
  type Queryable,
  type Config,
  type Database,
  type DatabaseHandle,
  type RevocationList,
  type ServedSubgraph,
  type TokenVerifier,
} from '@agentgraph/runtime';
import { exportJWK, generateKeyPair } from 'jose';
import * as client from 'openid-client';
import { freePort } from '../../../../test/src/ports.js';
import { provisionTestDatabase, type TestDatabase } from '../../../../test/src/database.js';
import { bootstrapTenant, identitySubgraph } from '../../src/index.js';
import { DESKTOP_CLIENT_ID } from '../../src/oauth/constants.js';
import { withUserCodeGuard, type UserCodeCaller } from '../../src/oauth/device-approval.js';
import { oauthServiceFor, type OAuthService } from '../../src/oauth/service.js';

export interface OAuthHarness {
  testDb: TestDatabase;
  config: Config;
  db: Database;
  handle: DatabaseHandle;
  served: ServedSubgraph;
  issuer: string;
  oauth: OAuthService;
  revocations: RevocationList;
  verify: TokenVerifier;
  logs: string[];
  member(tenant: string, email: string): Promise<{ tenantId: string; userId: string; auth: AuthContext }>;
  desktop(): Promise<client.Configuration>;
  /**
   * Runs device-approval work the way the page and GraphQL do: under the wrong-guess guard (from `from`: an address
   * and a clock; by default no address and the real clock), in a tenant transaction.
   */
  guarded<T>(
    auth: AuthContext,
    fn: (tx: Queryable) => Promise<T>,
    from?: Omit<UserCodeCaller, 'auth'>,
  ): Promise<T>;
  close(): Promise<void>;
}

export async function startOAuthIdentity(env: Record<string, string> = {}): Promise<OAuthHarness> {
  const testDb = await provisionTestDatabase();
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    ...testDb.env,
    IDENTITY_PORT: String(port),
    TOKEN_ISSUER: issuer,
    LOG_LEVEL: 'debug',
    OAUTH_CONSOLE_REDIRECT_URIS: 'http://127.0.0.1:9/callback',
    DEVICE_POLL_INTERVAL_SECONDS: '1',
    ...env,
  });
  const { db, handle } = await openDatabase(config, [identitySubgraph.migrations], 'identity');
  const logs: string[] = [];
  const log = createLogger(
    { service: 'identity-oauth-test' },
    { level: 'debug', write: (l) => logs.push(l) },
  );
  const revocations = createRevocationList(db, log);
  await revocations.ready;
  const verify = createTokenVerifier({
    issuer,
    audience: config.tokenAudience,
    keys: `${issuer}/.well-known/jwks.json`,
    revocations,
  });
  const served = await serveSubgraph(identitySubgraph, { config, db, log, port, verifyToken: verify });
  const oauth = oauthServiceFor({ config, db, log });
  await oauth.ready;
  return {
    testDb,
    config,
    db,
    handle,
    served,
    issuer,
    oauth,
    revocations,
    verify,
    logs,
    async member(tenant, email) {
      const { tenantId, userId } = await bootstrapTenant(handle.owner, {
        tenantName: tenant,
        email,
        displayName: email.split('@')[0]!,
      });
      return {
        tenantId,
        userId,
        auth: { tenantId, principalId: userId, role: 'OWNER', scopes: ['api:read', 'api:write'] },
      };
    },
    guarded(auth, fn, from) {
      return withUserCodeGuard(oauth, from ? { ...from, auth } : auth, () => withTenant(db, auth, fn));
    },
    desktop() {
      return client.discovery(new URL(issuer), DESKTOP_CLIENT_ID, undefined, client.None(), {
        execute: [client.allowInsecureRequests],
      });
    },
    async close() {
      await served.close();
      await oauth.close();
      await revocations.close();
      await handle.close();
      await testDb.drop();
    },
  };
}

/** A device's report-signing key pair and the enrolment parameters that carry its public half. */
export async function deviceEnrolment(name = 'Ada’s laptop', platform = 'linux') {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(publicKey);
  return {
    privateKey,
    publicJwk: jwk,
    params: {
      scope: 'openid offline_access api:read api:write',
      device_name: name,
      device_platform: platform,
      device_jwk: JSON.stringify(jwk),
    },
  };
}
