/**
 * One database role per service (least privilege). Every service connects as its own role, derived from the app
 * role `DATABASE_APP_ROLE` (default `agentgraph_app`): `agentgraph_app_identity`, `…_memory`, `…_coordination`,
 * `…_catalog`, `…_gateway`. The app role itself keeps only what every subgraph shares (the runtime schema:
 * tenancy, idempotency keys, reading the revocation list); the four subgraph roles are members of it, each holds its
 * own schema's grants (moved there by each namespace's `service_role` migration) and nothing of another's; the
 * gateway's role is no member and may only read the revocation list.
 *
 * Migrations name them with placeholders: `:app_role`, and `:identity_role`, `:memory_role`, `:coordination_role`,
 * `:catalog_role`, `:gateway_role`.
 */
export const SERVICES = ['identity', 'memory', 'coordination', 'catalog', 'gateway'] as const;
export type Service = (typeof SERVICES)[number];

/** The services whose roles inherit the app role's shared grants (all but the gateway). */
export const SUBGRAPH_SERVICES: readonly Service[] = ['identity', 'memory', 'coordination', 'catalog'];

const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function serviceRole(appRole: string, service: Service): string {
  const role = `${appRole}_${service}`;
  if (!ROLE_NAME.test(role)) throw new Error(`Invalid role name derived from DATABASE_APP_ROLE: ${role}`);
  return role;
}

const PLACEHOLDER = new RegExp(`:(app|${SERVICES.join('|')})_role\\b`, 'g');

/** Replaces the role placeholders of a migration's SQL with the actual role names. */
export function substituteRoles(sql: string, appRole: string): string {
  return sql.replace(PLACEHOLDER, (_, name: string) =>
    name === 'app' ? appRole : serviceRole(appRole, name as Service),
  );
}
