/**
 * Limits on createWorkspace per tenant (src/workspace-limits.ts), over real HTTP on a fake clock:
 * the sliding-window rate (RATE_LIMITED with retryAfterMs, exact on the clock), the ceiling on workspaces held
 * (FORBIDDEN WORKSPACE_LIMIT, freed by a delete), replays not counted, concurrent creates never past the limit, other
 * tenants unaffected, and nothing written on a refusal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf, dataOf, newPrincipal, type Principal } from '../../../test/src/subgraph-harness.js';
import { key, startMemoryHarness, type MemoryHarness } from './harness.js';

const CREATE =
  'mutation W($name: String!, $k: ID!) { createWorkspace(input: { name: $name }, idempotencyKey: $k) { workspace { id } } }';
const DELETE = 'mutation D($id: ID!, $k: ID!) { deleteWorkspace(id: $id, idempotencyKey: $k) { deletedId } }';
const COUNT = '{ workspaces(first: 100) { edges { node { name } } } }';

let h: MemoryHarness;
beforeAll(async () => {
  h = await startMemoryHarness({ workspaceLimits: { perWindow: 3, windowMs: 10_000, maxPerTenant: 5 } });
});
afterAll(async () => h?.close());

const create = (p: Principal, name: string, k = key()) => h.gql(p, CREATE, { name, k });
const names = async (p: Principal) =>
  dataOf(await h.gql(p, COUNT)).workspaces.edges.map((e: { node: { name: string } }) => e.node.name);

describe('createWorkspace limits', () => {
  it('refuses the creation past perWindow with RATE_LIMITED and the exact wait, then lets it through', async () => {
    const p = newPrincipal('OPERATOR');
    dataOf(await create(p, 'a'));
    h.clock.advance(2_000);
    dataOf(await create(p, 'b'));
    h.clock.advance(1_000);
    const replayedKey = key();
    dataOf(await create(p, 'c', replayedKey));
    h.clock.advance(500);
    const refused = await create(p, 'd');
    expect(codeOf(refused)).toBe('RATE_LIMITED');
    // The first creation leaves the window 10 s after it: 3.5 s have passed.
    expect(refused.body.errors![0]!.extensions!['retryAfterMs']).toBe(6_500);
    expect(refused.body.data).toBeNull();
    expect(await names(p)).not.toContain('d');
    // A replay is the stored answer, not a new creation.
    const replay = await create(p, 'c', replayedKey);
    expect(codeOf(replay)).toBeUndefined();
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    // Another tenant has its own window.
    expect(codeOf(await create(newPrincipal(), 'elsewhere'))).toBeUndefined();
    h.clock.advance(6_499);
    expect(codeOf(await create(p, 'd'))).toBe('RATE_LIMITED');
    h.clock.advance(1);
    expect(codeOf(await create(p, 'd'))).toBeUndefined();
    expect((await names(p)).sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('lets exactly perWindow of many concurrent creations through', async () => {
    const p = newPrincipal('OPERATOR');
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => create(p, `c${i}`)));
    const codes = results.map((r) => String(codeOf(r) ?? 'ok')).sort();
    expect(codes).toEqual(['RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED', 'ok', 'ok', 'ok']);
    expect(await names(p)).toHaveLength(3);
  });

  it('holds a tenant to maxPerTenant workspaces (FORBIDDEN WORKSPACE_LIMIT) until it deletes one', async () => {
    const p = newPrincipal('OPERATOR');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(dataOf(await create(p, `w${i}`)).createWorkspace.workspace.id);
      h.clock.advance(10_000);
    }
    const full = await create(p, 'one too many');
    expect(codeOf(full)).toBe('FORBIDDEN');
    expect(full.body.errors![0]!.extensions!['reason']).toBe('WORKSPACE_LIMIT');
    expect(await names(p)).toHaveLength(5);
    dataOf(await h.gql(p, DELETE, { id: ids[0], k: key() }));
    expect(codeOf(await create(p, 'one too many'))).toBeUndefined();
  });
});
