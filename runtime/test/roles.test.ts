import { describe, expect, it } from 'vitest';
import { ROLES, roleCovers, roleMeet, rolesCovering, type Role } from '../src/roles.js';

describe('roles lattice', () => {
  it('orders OWNER > ADMIN > {OPERATOR, PUBLISHER} > VIEWER, with OPERATOR and PUBLISHER incomparable', () => {
    expect(roleCovers('OWNER', 'PUBLISHER')).toBe(true);
    expect(roleCovers('ADMIN', 'OPERATOR')).toBe(true);
    expect(roleCovers('ADMIN', 'PUBLISHER')).toBe(true);
    expect(roleCovers('ADMIN', 'OWNER')).toBe(false);
    expect(roleCovers('OPERATOR', 'PUBLISHER')).toBe(false);
    expect(roleCovers('PUBLISHER', 'OPERATOR')).toBe(false);
    expect(roleCovers('PUBLISHER', 'VIEWER')).toBe(true);
    expect(roleCovers('VIEWER', 'PUBLISHER')).toBe(false);
  });

  it('is a partial order (reflexive, antisymmetric, transitive) over every pair and triple', () => {
    for (const a of ROLES) {
      expect(roleCovers(a, a)).toBe(true);
      for (const b of ROLES) {
        if (a !== b) expect(roleCovers(a, b) && roleCovers(b, a)).toBe(false);
        for (const c of ROLES) if (roleCovers(a, b) && roleCovers(b, c)) expect(roleCovers(a, c)).toBe(true);
      }
    }
  });

  it('meets at the greatest role both cover', () => {
    for (const a of ROLES)
      for (const b of ROLES) {
        const m = roleMeet(a, b);
        expect(roleCovers(a, m) && roleCovers(b, m)).toBe(true);
        // Greatest: every common lower bound is covered by the meet.
        for (const x of ROLES) if (roleCovers(a, x) && roleCovers(b, x)) expect(roleCovers(m, x)).toBe(true);
        expect(roleMeet(b, a)).toBe(m);
      }
    expect(roleMeet('OPERATOR', 'PUBLISHER')).toBe<Role>('VIEWER');
    expect(roleMeet('OWNER', 'PUBLISHER')).toBe<Role>('PUBLISHER');
  });

  it('names who covers a role, for error messages', () => {
    expect(rolesCovering('OPERATOR')).toBe('OPERATOR, ADMIN or OWNER');
    expect(rolesCovering('PUBLISHER')).toBe('PUBLISHER, ADMIN or OWNER');
    expect(rolesCovering('OWNER')).toBe('OWNER');
  });
});
