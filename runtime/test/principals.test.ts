/**
 * principals.ts: the principal kinds, the root fields an operation selects (fragments cannot hide one), and the check
 * a subgraph server runs before any resolver (default deny for devices and sidecars; a table naming a field the schema
 * lacks is refused when the server is made).
 */
import { buildSchema, getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import {
  createPrincipalCheck,
  principalKindOf,
  requirePersonToken,
  rootFieldsOf,
  type PrincipalOperations,
} from '../src/principals.js';
import type { AuthContext } from '../src/tenancy.js';
import { expectAppError } from './helpers.js';

const schema = buildSchema(`
  type Query { me: String, secrets: String, _service: String }
  type Mutation { report: String, promote(to: String): String }
  type Subscription { feed: String, audit: String }
`);
const table: PrincipalOperations = {
  DEVICE: ['Query.me', 'Mutation.report', 'Subscription.feed'],
  SIDECAR: ['Query.me'],
};

const base: AuthContext = {
  tenantId: 't',
  principalId: 'u',
  role: 'OWNER',
  scopes: ['api:read', 'api:write'],
};
const person = base;
const device: AuthContext = { ...base, deviceId: 'd' };
const sidecar: AuthContext = { ...base, deviceId: 'd', actor: 'agentgraph-desktop' };

function op(query: string) {
  const document = parse(query);
  return { document, operation: getOperationAST(document)! };
}

describe('principalKindOf', () => {
  it('is PERSON without did, DEVICE with did, SIDECAR with act (with or without did)', () => {
    expect(principalKindOf(person)).toBe('PERSON');
    expect(principalKindOf(device)).toBe('DEVICE');
    expect(principalKindOf(sidecar)).toBe('SIDECAR');
    expect(principalKindOf({ ...base, actor: 'agentgraph-desktop' })).toBe('SIDECAR');
  });
});

describe('rootFieldsOf', () => {
  it('names every root field, through inline fragments, spreads and nested spreads, by name not alias', () => {
    const { document, operation } = op(`
      mutation { a: report ...F ... on Mutation { ...G } }
      fragment F on Mutation { promote(to: "ADMIN") }
      fragment G on Mutation { ...F report @skip(if: true) }
    `);
    expect(rootFieldsOf(document, operation).sort()).toEqual(['Mutation.promote', 'Mutation.report']);
  });
});

describe('createPrincipalCheck', () => {
  const check = createPrincipalCheck(schema, table);
  const run = (auth: AuthContext | null, query: string) => {
    const { document, operation } = op(query);
    check(auth, document, operation);
  };

  it('lets persons and anonymous callers through (roles and resolvers decide)', () => {
    expect(() => run(person, 'mutation { promote(to: "ADMIN") }')).not.toThrow();
    expect(() => run(null, '{ secrets }')).not.toThrow();
  });

  it('lets a device call its listed fields, and federation and introspection fields', () => {
    expect(() => run(device, '{ me __typename _service }')).not.toThrow();
    expect(() => run(device, 'mutation { report }')).not.toThrow();
    expect(() => run(device, 'subscription { feed }')).not.toThrow();
  });

  it('refuses a device any other root field, also hidden in a fragment, with the kind and field', async () => {
    const e = await expectAppError(
      () => run(device, 'mutation { report promote(to: "ADMIN") }'),
      'FORBIDDEN',
    );
    expect(e.extensions).toMatchObject({ principalKind: 'DEVICE', field: 'Mutation.promote' });
    expect(e.message).toContain("A device's own access token cannot call Mutation.promote");
    await expectAppError(
      () => run(device, 'mutation { ...F } fragment F on Mutation { promote(to: "ADMIN") }'),
      'FORBIDDEN',
    );
    await expectAppError(() => run(device, '{ me secrets }'), 'FORBIDDEN');
    await expectAppError(() => run(device, 'subscription { audit }'), 'FORBIDDEN');
  });

  it('gives a sidecar only its own list (not the device’s), saying token exchange', async () => {
    expect(() => run(sidecar, '{ me }')).not.toThrow();
    const e = await expectAppError(() => run(sidecar, 'mutation { report }'), 'FORBIDDEN');
    expect(e.extensions).toMatchObject({ principalKind: 'SIDECAR', field: 'Mutation.report' });
    expect(e.message).toContain('token exchange');
  });

  it('denies devices and sidecars everything but federation fields when a server has no table', async () => {
    const none = createPrincipalCheck(schema);
    const { document, operation } = op('{ me }');
    await expectAppError(() => none(device, document, operation), 'FORBIDDEN');
    await expectAppError(() => none(sidecar, document, operation), 'FORBIDDEN');
    const fed = op('{ _service __typename }');
    expect(() => none(device, fed.document, fed.operation)).not.toThrow();
  });

  it('refuses, when the server is made, a table that names a field the schema lacks', () => {
    expect(() => createPrincipalCheck(schema, { DEVICE: ['Query.mee'], SIDECAR: [] })).toThrow(/Query\.mee/);
    expect(() => createPrincipalCheck(schema, { DEVICE: [], SIDECAR: ['Mutation.me'] })).toThrow(
      /Mutation\.me/,
    );
  });
});

describe('requirePersonToken', () => {
  it("passes a person's token and refuses a device's or a sidecar's", async () => {
    expect(requirePersonToken(person, 'upload packages')).toBe(person);
    const e = await expectAppError(() => requirePersonToken(device, 'upload packages'), 'FORBIDDEN');
    expect(e.extensions['principalKind']).toBe('DEVICE');
    const s = await expectAppError(() => requirePersonToken(sidecar, 'upload packages'), 'FORBIDDEN');
    expect(s.message).toContain('token exchange');
  });
});
