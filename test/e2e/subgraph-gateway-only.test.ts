/**
 * What a client that reaches a subgraph directly gets (runtime README, "The gateway secret"), over real HTTP:
 * - a subgraph in production mode (memory, test/src/subgraph-harness.ts): `_service` and `_entities` only with the
 *   gateway secret (x-agentgraph-gateway; aliases, fragments and /graphql/stream included), no "Did you mean" in
 *   validation or coercion errors, introspection off, POST bodies only as application/json (text/plain, a form or no
 *   type: 415, never run, nothing written);
 * - the whole platform: federated queries, which the gateway plans with `_entities`, still work, while identity asked
 *   directly without the secret refuses them; the gateway refuses a text/plain mutation the same way (415).
 */
import { randomUUID } from 'node:crypto';
import { GATEWAY_SECRET_HEADER } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memorySubgraph } from '../../subgraphs/memory/src/index.js';
import { startTestPlatform, type TestPlatform } from '../src/platform.js';
import {
  codeOf,
  dataOf,
  newPrincipal,
  startSubgraph,
  type Harness,
  type Principal,
} from '../src/subgraph-harness.js';

const CREATE =
  'mutation W($name: String!, $k: ID!) { createWorkspace(input: { name: $name }, idempotencyKey: $k) { workspace { id } } }';
const LIST = '{ workspaces(first: 50) { edges { node { id name } } } }';
const ENTITIES = 'query E($r: [_Any!]!) { _entities(representations: $r) { ... on Workspace { id name } } }';

describe('a subgraph in production mode', () => {
  let h: Harness;
  let alice: Principal;
  let workspaceId: string;

  beforeAll(async () => {
    // loadConfig insists on DATABASE_URL in production; what matters here is the mode the server runs in.
    h = await startSubgraph(memorySubgraph, {}, (c) => ({ ...c, mode: 'production', introspection: false }));
    alice = newPrincipal('OPERATOR');
    workspaceId = dataOf(await h.gql(alice, CREATE, { name: 'notes', k: randomUUID() })).createWorkspace
      .workspace.id;
  });
  afterAll(async () => h?.close());

  it('answers _service { sdl } to the gateway only', async () => {
    const direct = await h.gql(alice, '{ _service { sdl } }', undefined, { asGateway: false });
    expect(direct.status).toBe(403);
    expect(codeOf(direct)).toBe('FORBIDDEN');
    expect(direct.body.data).toBeUndefined();
    expect(JSON.stringify(direct.body)).not.toContain('Workspace');
    const forged = await h.gql(alice, '{ _service { sdl } }', undefined, {
      asGateway: false,
      headers: { [GATEWAY_SECRET_HEADER]: `${h.config.gatewaySecret}x` },
    });
    expect(codeOf(forged)).toBe('FORBIDDEN');
    // Anonymous callers too (the token is not what decides).
    expect(codeOf(await h.gql(null, '{ _service { sdl } }', undefined, { asGateway: false }))).toBe(
      'FORBIDDEN',
    );
    const gateway = await h.gql(alice, '{ _service { sdl } }');
    expect(dataOf(gateway)._service.sdl).toContain('type Workspace');
  });

  it('answers _entities to the gateway only, under an alias or in a fragment too', async () => {
    const r = [{ __typename: 'Workspace', id: workspaceId }];
    for (const query of [
      ENTITIES,
      'query E($r: [_Any!]!) { mine: _entities(representations: $r) { ... on Workspace { id } } }',
      'query E($r: [_Any!]!) { ...F } fragment F on Query { _entities(representations: $r) { __typename } }',
      'query E($r: [_Any!]!) { workspaces(first: 1) { edges { node { id } } } x: _entities(representations: $r) { __typename } }',
    ]) {
      const direct = await h.gql(alice, query, { r }, { asGateway: false });
      expect(direct.status).toBe(403);
      expect(codeOf(direct)).toBe('FORBIDDEN');
      expect(direct.body.data).toBeUndefined();
    }
    expect(dataOf(await h.gql(alice, ENTITIES, { r }))._entities).toEqual([
      { id: workspaceId, name: 'notes' },
    ]);
  });

  it('refuses _service on /graphql/stream without the secret too', async () => {
    const res = await fetch(h.url.replace(/\/graphql$/, '/graphql/stream'), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${await h.token(alice)}`,
      },
      body: JSON.stringify({ query: '{ _service { sdl } }' }),
    });
    const text = await res.text();
    expect(res.status).toBe(403);
    expect(text).toContain('FORBIDDEN');
    expect(text).not.toContain('type Workspace');
  });

  it('gives no "Did you mean" suggestions in validation and coercion errors', async () => {
    const misspelled = await h.gql(alice, '{ workspace(id: "x") { nmae } }');
    expect(codeOf(misspelled)).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(misspelled.body.errors![0]!.message).toContain('Cannot query field "nmae"');
    const unknownArgument = await h.gql(alice, '{ workspaces(frist: 1) { edges { cursor } } }');
    expect(codeOf(unknownArgument)).toBe('GRAPHQL_VALIDATION_FAILED');
    const badEnum = await h.gql(
      alice,
      'mutation M($p: SecretPolicy!, $k: ID!) { createWorkspace(input: { name: "x", secretPolicy: $p }, idempotencyKey: $k) { workspace { id } } }',
      { p: 'REJCT', k: randomUUID() },
    );
    expect(codeOf(badEnum)).toBe('BAD_USER_INPUT');
    for (const r of [misspelled, unknownArgument, badEnum]) {
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body)).not.toMatch(/Did you mean|name"|first|REJECT/);
    }
  });

  it('has introspection off', async () => {
    const r = await h.gql(alice, '{ __schema { types { name } } }');
    expect(codeOf(r)).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(r.body.data).toBeUndefined();
  });

  it('refuses a mutation sent as text/plain, as a form or without a type (415), and writes nothing', async () => {
    const token = await h.token(alice);
    const body = JSON.stringify({ query: CREATE, variables: { name: 'csrf', k: randomUUID() } });
    for (const contentType of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      null,
    ]) {
      const res = await fetch(h.url, {
        method: 'POST',
        headers: {
          ...(contentType ? { 'content-type': contentType } : {}),
          authorization: `Bearer ${token}`,
          [GATEWAY_SECRET_HEADER]: h.config.gatewaySecret,
        },
        // Bytes, so fetch adds no Content-Type of its own when none is given.
        body: new TextEncoder().encode(body),
      });
      expect(res.status).toBe(415);
      const json = (await res.json()) as { errors: { extensions: { code: string } }[] };
      expect(json.errors[0]!.extensions.code).toBe('BAD_USER_INPUT');
    }
    // Nor on /graphql/stream (graphql-sse alone took any type that merely contains "application/json").
    for (const contentType of ['text/plain; charset=application/json', 'text/plain']) {
      const res = await fetch(h.url.replace(/\/graphql$/, '/graphql/stream'), {
        method: 'POST',
        headers: {
          'content-type': contentType,
          accept: 'text/event-stream',
          authorization: `Bearer ${token}`,
          [GATEWAY_SECRET_HEADER]: h.config.gatewaySecret,
        },
        body,
      });
      expect(res.status).toBe(415);
      await res.body?.cancel();
    }
    const names = dataOf(await h.gql(alice, LIST)).workspaces.edges.map(
      (e: { node: { name: string } }) => e.node.name,
    );
    expect(names).toEqual(['notes']);
    // application/json with parameters is fine.
    const ok = await fetch(h.url, {
      method: 'POST',
      headers: { 'content-type': 'Application/JSON; charset=utf-8', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: LIST }),
    });
    expect(ok.status).toBe(200);
  });
});

describe('the platform: the gateway sends the secret, clients cannot', () => {
  let p: TestPlatform;

  beforeAll(async () => {
    p = await startTestPlatform();
  });
  afterAll(async () => p?.close());

  it('resolves a federated query through the gateway, and identity refuses the same _entities asked directly', async () => {
    const alice = await p.tokenFor({ tenant: 'gateway-only', displayName: 'Alice' });
    const created = await p.gql(CREATE, { name: 'shared', k: randomUUID() }, alice.token);
    expect(created.errors).toBeUndefined();
    const id = created.data.createWorkspace.workspace.id as string;
    // createdBy comes from identity: the gateway asks it with _entities.
    const federated = await p.gql(
      'query W($id: ID!) { workspace(id: $id) { name createdBy { id displayName } } }',
      { id },
      alice.token,
    );
    expect(federated.errors).toBeUndefined();
    expect(federated.data.workspace).toEqual({
      name: 'shared',
      createdBy: { id: alice.userId, displayName: 'Alice' },
    });

    const ask = (headers: Record<string, string>) =>
      fetch(`${p.subgraphs.identity}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${alice.token}`, ...headers },
        body: JSON.stringify({
          query: 'query U($r: [_Any!]!) { _entities(representations: $r) { ... on User { id email } } }',
          variables: { r: [{ __typename: 'User', id: alice.userId }] },
        }),
      });
    const direct = await ask({});
    expect(direct.status).toBe(403);
    expect(JSON.stringify(await direct.json())).not.toContain(alice.email);
    const asGateway = await ask({ [GATEWAY_SECRET_HEADER]: p.platform.config.gatewaySecret });
    expect(((await asGateway.json()) as any).data._entities).toEqual([
      { id: alice.userId, email: alice.email },
    ]);
  });

  it('the gateway refuses a text/plain mutation (415) and runs nothing', async () => {
    const bob = await p.tokenFor({ tenant: 'gateway-only-csrf' });
    const res = await fetch(`${p.gatewayUrl}/graphql`, {
      method: 'POST',
      // apollo-require-preflight would let a simple request past Apollo Server's CSRF check: not past this one.
      headers: {
        'content-type': 'text/plain',
        authorization: `Bearer ${bob.token}`,
        'apollo-require-preflight': '1',
      },
      body: JSON.stringify({ query: CREATE, variables: { name: 'csrf', k: randomUUID() } }),
    });
    expect(res.status).toBe(415);
    const list = await p.gql(LIST, {}, bob.token);
    expect(list.data.workspaces.edges).toEqual([]);
    const stream = await fetch(`${p.gatewayUrl}/graphql/stream`, {
      method: 'POST',
      headers: {
        'content-type': 'text/plain; charset=application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${bob.token}`,
      },
      body: JSON.stringify({ query: 'subscription { agentMessages { id } }' }),
    });
    expect(stream.status).toBe(415);
    await stream.body?.cancel();
  });
});
