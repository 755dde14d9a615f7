/**
 * The identity subgraph: tenants, users, memberships and roles, devices, the access-token signing keys (JWKS)
 * and the public capabilities query. See ../README.md.
 */
import { fileURLToPath } from 'node:url';
import { schemaFileOf, type MigrationSet, type SubgraphModule } from '@agentgraph/runtime';
import { ensureSigningKey } from './keys.js';
import { identityPrincipals } from './principals.js';
import { resolvers } from './resolvers.js';
import { identityRoutes } from './routes.js';

export const identityMigrations: MigrationSet = {
  namespace: 'identity',
  dir: fileURLToPath(new URL('../migrations', import.meta.url)),
};

export const identitySubgraph: SubgraphModule = {
  name: 'identity',
  schemaFile: schemaFileOf('identity'),
  resolvers,
  migrations: identityMigrations,
  routes: identityRoutes,
  principals: identityPrincipals,
  background({ db, log }) {
    // On start: make sure a signing key exists before the first token or JWKS request needs one.
    const ready = ensureSigningKey(db).then(
      ({ kid, created }) => log.info(created ? 'signing key created' : 'signing key ready', { kid }),
      (error: unknown) => log.error('could not ensure a signing key; token issuance will retry', { error }),
    );
    return async () => {
      await ready;
    };
  },
};

export { bootstrapTenant, ensureDevelopmentTenant, DEVELOPMENT_TENANT } from './bootstrap.js';
export type { BootstrapTenantInput, BootstrapTenantResult, DevelopmentTenant } from './bootstrap.js';
export { activeSigningKey, ensureSigningKey, generateSigningKey, publishedJwks } from './keys.js';
export { ACCESS_TOKEN_TTL_SECONDS, issueAccessToken } from './tokens.js';
export type { AccessTokenSubject } from './tokens.js';
export { DEV_TOKEN_PATH, JWKS_PATH, identityRoutes, isLoopback } from './routes.js';
export { schemaVersion } from './capabilities.js';
