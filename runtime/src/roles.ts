/**
 * Tenant roles and how they relate. Not a ladder but a small lattice:
 *
 *            OWNER
 *              │
 *            ADMIN
 *            ╱    ╲
 *      OPERATOR  PUBLISHER
 *            ╲    ╱
 *            VIEWER
 *
 * OPERATOR runs things on devices (intents, rooms, memory writes); PUBLISHER uploads plugins to the catalog;
 * neither may do what the other does. ADMIN and OWNER may do both. A token's role may be lower than the member's
 * current role (token exchange down-scopes); a request acts with the meet of the two.
 */
export const ROLES = ['OWNER', 'ADMIN', 'OPERATOR', 'PUBLISHER', 'VIEWER'] as const;
export type Role = (typeof ROLES)[number];

const COVERS: Readonly<Record<Role, ReadonlySet<Role>>> = {
  OWNER: new Set(ROLES),
  ADMIN: new Set<Role>(['ADMIN', 'OPERATOR', 'PUBLISHER', 'VIEWER']),
  OPERATOR: new Set<Role>(['OPERATOR', 'VIEWER']),
  PUBLISHER: new Set<Role>(['PUBLISHER', 'VIEWER']),
  VIEWER: new Set<Role>(['VIEWER']),
};

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** True when a holder of `held` may do everything `needed` may (`held` is `needed` or above it). */
export function roleCovers(held: Role, needed: Role): boolean {
  return COVERS[held].has(needed);
}

/** The highest role both `a` and `b` cover (OPERATOR and PUBLISHER meet at VIEWER). */
export function roleMeet(a: Role, b: Role): Role {
  if (roleCovers(a, b)) return b;
  if (roleCovers(b, a)) return a;
  // The lattice's only incomparable pair: OPERATOR and PUBLISHER.
  return 'VIEWER';
}

/** The roles that cover `needed`, lowest first, as error messages name them: "OPERATOR, ADMIN or OWNER". */
export function rolesCovering(needed: Role): string {
  const names = ROLES.filter((r) => roleCovers(r, needed)).reverse();
  return names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} or ${names.at(-1)!}`;
}
