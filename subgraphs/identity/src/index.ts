/**
 * The identity subgraph: tenants, users, memberships and roles, devices, the access-token signing keys (JWKS)
 * and the public capabilities query. See ../README.md.
 */
import { fileURLToPath } from 'node:url';
import { keyVault, schemaFileOf, type MigrationSet, type SubgraphModule } from '@agentgraph/runtime';
import { ensureSigningKey, sealStoredSigningKeys } from './keys.js';
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
  background({ config, db, log }) {
    // On start: seal stored private keys that are not sealed under the active key-encryption key (keys from before
    // encryption, or a KEK rotation), then make sure a signing key exists before the first token or JWKS request.
    const vault = keyVault(config);
    const ready = sealStoredSigningKeys(db, vault)
      .then((sealed) => {
        if (sealed > 0)
          log.info('stored signing keys sealed with the active key-encryption key', {
            sealed,
            kek: vault.activeId,
          });
        return ensureSigningKey(db, vault);
      })
      .then(
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
export {
  activeSigningKey,
  ensureSigningKey,
  generateSigningKey,
  publishedJwks,
  sealStoredSigningKeys,
} from './keys.js';
export { ACCESS_TOKEN_TTL_SECONDS, issueAccessToken } from './tokens.js';
export type { AccessTokenSubject } from './tokens.js';
export { DEV_TOKEN_PATH, JWKS_PATH, identityRoutes, isLoopback } from './routes.js';
export { schemaVersion } from './capabilities.js';
