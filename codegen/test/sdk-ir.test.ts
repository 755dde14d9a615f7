/**
 * The IR the SDK targets are generated from: operations (curated and default), documents, privacy tables,
 * connections and idempotency, on the real API schema and on a fixture schema with the constructs it lacks.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { buildSchema, parse, print } from 'graphql';
import { describe, expect, it } from 'vitest';
import { buildIR } from '../src/sdk/build-ir.js';
import { loadInputs, schemaVersionOf } from '../src/sdk/inputs.js';
import type { IR, OperationIR } from '../src/sdk/ir.js';
import { buildManifest } from '../src/sdk/manifest.js';
import { fixtureInputs, ROOT } from './sdk-fixture.js';

const real = buildIR(loadInputs(ROOT));

function op(ir: IR, name: string): OperationIR {
  const found = ir.operations.find((o) => o.name === name);
  if (!found) throw new Error(`no operation ${name} (have ${ir.operations.map((o) => o.name).join(', ')})`);
  return found;
}

describe('the IR of the real API', () => {
  it('has an operation for every root field of Query, Mutation and Subscription', () => {
    const schema = buildSchema(readFileSync(`${ROOT}/schemas/api.graphql`, 'utf8'));
    const roots = [
      ['query', schema.getQueryType()],
      ['mutation', schema.getMutationType()],
      ['subscription', schema.getSubscriptionType()],
    ] as const;
    let fields = 0;
    for (const [kind, type] of roots) {
      for (const field of Object.keys(type!.getFields())) {
        fields++;
        const ops = real.operations.filter((o) => o.kind === kind && o.rootFields.includes(field));
        expect(ops.length, `${kind} ${field}`).toBeGreaterThan(0);
      }
    }
    expect(fields).toBeGreaterThan(25); // the test saw the real schema
    // The curated ones win: no default operation for a field a curated document selects.
    expect(op(real, 'PostMessage').origin).toEqual({
      kind: 'curated',
      file: 'schemas/operations/coordination.graphql',
    });
    expect(op(real, 'PutMemory').origin).toEqual({
      kind: 'curated',
      file: 'schemas/operations/memory.graphql',
    });
    expect(op(real, 'CreateIntent').origin).toEqual({ kind: 'default', field: 'Mutation.createIntent' });
  });

  it('subscription defaults reference other entities by id only (one subgraph serves a stream)', () => {
    const sub = op(real, 'DeviceIntentsSubscription');
    expect(sub.kind).toBe('subscription');
    expect(sub.document).toContain('device { id }');
    expect(sub.document).toContain('requester { id }');
    expect(sub.document).toContain(' jws ');
    // Queries keep the deeper default selection.
    expect(op(real, 'DeviceIntents').document).toContain('device { id name platform');
  });

  it('privacy tables come from @privacy on arguments and input fields', () => {
    // A curated document's table comes from the schema as a default one's does.
    expect(op(real, 'PutMemory').privacy).toEqual({
      'input.content': { class: 'PERSONAL', required: true },
      'input.embedding': { class: 'PERSONAL', required: false },
      'input.expiresAt': { class: 'INTERNAL', required: false },
      'input.kind': { class: 'INTERNAL', required: true },
      'input.metadata': { class: 'PERSONAL', required: false },
      'input.tags': { class: 'INTERNAL', required: false },
      'input.workspaceId': { class: 'INTERNAL', required: true },
    });
    expect(op(real, 'PostMessage').privacy).toEqual({ 'input.body': { class: 'PERSONAL', required: true } });
    expect(op(real, 'AddMember').privacy['input.email']).toEqual({ class: 'PERSONAL', required: true });
    expect(op(real, 'DeviceAuthorization').privacy).toEqual({
      userCode: { class: 'INTERNAL', required: true },
    });
    expect(op(real, 'Viewer').privacy).toEqual({});
  });

  it('mutations that take $idempotencyKey are idempotent and the key is optional for the caller', () => {
    const post = op(real, 'PostMessage');
    expect(post.idempotent).toBe(true);
    expect(post.variables.map((v) => [v.name, v.required])).toEqual([
      ['roomId', true],
      ['input', true],
      ['idempotencyKey', false],
    ]);
    expect(real.operations.filter((o) => o.kind === 'mutation').every((o) => o.idempotent)).toBe(true);
    expect(real.operations.filter((o) => o.kind !== 'mutation').some((o) => o.idempotent)).toBe(false);
  });

  it('finds the connections an operation pages through, with their variables', () => {
    expect(op(real, 'Devices').connections).toEqual([
      {
        path: ['tenant', 'devices'],
        nullable: [false, false],
        afterVariable: 'after',
        firstVariable: 'first',
        nodeTypeName: 'Device',
      },
    ]);
    expect(op(real, 'RoomMessages').connections[0]).toMatchObject({
      path: ['room', 'messages'],
      nullable: [true, false],
    });
    expect(op(real, 'Rooms').connections[0]?.nodeTypeName).toBe('Room');
    expect(op(real, 'Viewer').connections).toEqual([]);
  });

  it('documents are one canonical line that means the same as the source', () => {
    const source = readFileSync(`${ROOT}/schemas/operations/coordination.graphql`, 'utf8');
    const original = parse(source).definitions.find(
      (d) => d.kind === 'OperationDefinition' && d.name?.value === 'PostMessage',
    )!;
    const document = op(real, 'PostMessage').document;
    expect(document).not.toContain('\n');
    expect(document).not.toContain('#');
    expect(print(parse(document).definitions[0]!)).toBe(print(original));
    expect(
      document.startsWith(
        'mutation PostMessage($roomId: ID!, $input: PostMessageInput!, $idempotencyKey: ID!) {',
      ),
    ).toBe(true);
  });

  it("the Capabilities operation is byte for byte the runtime's own capabilities document", async () => {
    const { CAPABILITIES_DOCUMENT } = await import('../../sdk-templates/typescript/src/settings.js');
    expect(op(real, 'Capabilities').document).toBe(CAPABILITIES_DOCUMENT);
  });

  it('the manifest lists every operation by name with the SHA-256 of its exact document', () => {
    const manifest = buildManifest(real);
    expect(manifest.version).toBe(1);
    expect(manifest.schemaVersion).toBe(schemaVersionOf(readFileSync(`${ROOT}/schemas/api.graphql`, 'utf8')));
    expect(manifest.schemaVersion).toMatch(/^[0-9a-f]{12}$/);
    expect(manifest.operations.map((o) => o.name)).toEqual(real.operations.map((o) => o.name).sort());
    for (const entry of manifest.operations) {
      expect(entry.sha256).toBe(createHash('sha256').update(entry.document).digest('hex'));
      expect(entry.document).toBe(op(real, entry.name).document);
      expect(entry.kind).toBe(op(real, entry.name).kind);
    }
  });
});

describe('the IR of a fixture schema', () => {
  it('default operations: arguments as variables, bounded selections, connections, abstract types', () => {
    const ir = buildIR(fixtureInputs());
    expect(op(ir, 'Folder').document).toBe(
      // notes takes arguments and old is deprecated: both left out below the root; a union gets __typename.
      'query Folder($id: ID!) { folder(id: $id) { id name items { __typename } } }',
    );
    expect(op(ir, 'Node').document).toBe('query Node($id: ID!) { node(id: $id) { __typename id } }');
    expect(op(ir, 'Notes').document).toBe(
      'query Notes($first: Int, $after: String) { notes(first: $first, after: $after) { edges { cursor node { id text meta } } pageInfo { hasNextPage endCursor } } }',
    );
    expect(op(ir, 'Notes').connections).toEqual([
      {
        path: ['notes'],
        nullable: [false],
        afterVariable: 'after',
        firstVariable: 'first',
        nodeTypeName: 'Note',
      },
    ]);
    expect(op(ir, 'Ping')).toMatchObject({
      kind: 'mutation',
      idempotent: false,
      document: 'mutation Ping { ping }',
    });
    expect(op(ir, 'NoteAdded')).toMatchObject({ kind: 'subscription', idempotent: false });
    expect(ir.scalars).toEqual([{ name: 'JSON' }]);
    expect(ir.inputs.map((i) => i.name)).toEqual(['NoteInput', 'TagInput']);
  });

  it('privacy: nested input objects, lists as [], argument classes', () => {
    const ir = buildIR(fixtureInputs());
    expect(op(ir, 'AddNote').privacy).toEqual({
      'input.face': { class: 'BIOMETRIC', required: false },
      'input.tags': { class: 'INTERNAL', required: false },
      'input.tags[].label': { class: 'PUBLIC', required: true },
      'input.tags[].secret': { class: 'SECRET', required: false },
      'input.text': { class: 'PERSONAL', required: true },
    });
    expect(op(ir, 'Search').privacy).toEqual({ q: { class: 'PERSONAL', required: true } });
  });

  it('privacy: a variable inside an object literal gets the field class; two positions keep the stricter', () => {
    const ir = buildIR(
      fixtureInputs({
        'notes.graphql': `
          mutation AddText($folderId: ID!, $text: String!, $idempotencyKey: ID!) {
            addNote(folderId: $folderId, input: { text: $text }, idempotencyKey: $idempotencyKey) { id }
          }
          mutation Twice($t: String!, $label: String = "x", $idempotencyKey: ID!) {
            addNote(folderId: "f", input: { text: $t, tags: [{ label: $t }, { label: $label }] }, idempotencyKey: $idempotencyKey) { id }
          }`,
      }),
    );
    expect(op(ir, 'AddText').privacy).toEqual({ text: { class: 'PERSONAL', required: true } });
    expect(op(ir, 'Twice').privacy).toEqual({
      label: { class: 'PUBLIC', required: false }, // has a default: not required
      t: { class: 'PERSONAL', required: true }, // PUBLIC in a tag, PERSONAL as text: the stricter wins
    });
  });

  it('result shapes: aliases, fragments, @include, and one variant per type under type conditions', () => {
    const ir = buildIR(
      fixtureInputs({
        'items.graphql': `
          # Everything in the folder.
          query Things($id: ID!, $withName: Boolean!) {
            f: folder(id: $id) { ...FolderBits name @include(if: $withName) items { __typename ... on Note { text } ... on File { size } } }
          }
          fragment FolderBits on Folder { id }`,
      }),
    );
    const things = op(ir, 'Things');
    expect(things.description).toBe('Everything in the folder.');
    expect(things.document).toBe(
      'query Things($id: ID!, $withName: Boolean!) { f: folder(id: $id) { ...FolderBits name @include(if: $withName) items { __typename ... on Note { text } ... on File { size } } } } fragment FolderBits on Folder { id }',
    );
    const folder = things.result.fields[0]!;
    expect(folder.responseName).toBe('f');
    expect(folder.type.kind).toBe('OBJECT');
    const shape = folder.type.kind === 'OBJECT' ? folder.type.shape : undefined;
    expect(shape?.fields.map((f) => [f.responseName, f.optional])).toEqual([
      ['id', false],
      ['name', true],
      ['items', false],
    ]);
    const items = shape!.fields[2]!.type;
    const itemShape =
      items.kind === 'NON_NULL' && items.ofType.kind === 'LIST' && items.ofType.ofType.kind === 'NON_NULL'
        ? items.ofType.ofType.ofType
        : undefined;
    expect(itemShape?.kind === 'OBJECT' && itemShape.shape.variants?.map((v) => v.typeName)).toEqual([
      'File',
      'Note',
    ]);
  });

  it('a connection without pageInfo { hasNextPage endCursor } or without a variable cursor is not pageable', () => {
    const ir = buildIR(
      fixtureInputs({
        'c.graphql': `
          query Pageable($id: ID!, $after: String) { folder(id: $id) { notes(after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } } }
          query NoEnd($after: String) { notes(after: $after) { edges { node { id } } pageInfo { hasNextPage } } }
          query Literal { notes(after: "x") { edges { node { id } } pageInfo { hasNextPage endCursor } } }`,
      }),
    );
    expect(op(ir, 'Pageable').connections).toEqual([
      { path: ['folder', 'notes'], nullable: [true, false], afterVariable: 'after', nodeTypeName: 'Note' },
    ]);
    expect(op(ir, 'NoEnd').connections).toEqual([]);
    expect(op(ir, 'Literal').connections).toEqual([]);
  });

  it('a default operation whose name is taken gets its kind as suffix', () => {
    const ir = buildIR(fixtureInputs({ 'x.graphql': 'query Folder { items { __typename } }' }));
    expect(op(ir, 'Folder').origin.kind).toBe('curated');
    expect(op(ir, 'FolderQuery').origin).toEqual({ kind: 'default', field: 'Query.folder' });
  });

  it('refuses documents it cannot serve, saying where and what to do', () => {
    expect(() =>
      buildIR(
        fixtureInputs({
          'bad.graphql':
            'mutation NoKey($f: ID!) { addNote(folderId: $f, input: { text: "x" }, idempotencyKey: "k") { id } }',
        }),
      ),
    ).toThrow(/bad\.graphql:1: NoKey must pass `idempotencyKey: \$idempotencyKey` to addNote/);
    expect(() => buildIR(fixtureInputs({ 'v.graphql': 'query Broken { folder { nope } }' }))).toThrow(
      /Operation Broken does not validate[\s\S]*schemas\/operations\/v\.graphql:1/,
    );
    expect(() => buildIR(fixtureInputs({ 'a.graphql': '{ items { __typename } }' }))).toThrow(
      /a\.graphql:1: an operation without a name/,
    );
    expect(() =>
      buildIR(
        fixtureInputs({
          'a.graphql': 'query A { ping: items { __typename } }',
          'b.graphql': 'query A { items { __typename } }',
        }),
      ),
    ).toThrow(/b\.graphql:1: operation A is also defined at schemas\/operations\/a\.graphql:1/);
    const recursive = `${'directive @privacy(class: DataClass!) on INPUT_FIELD_DEFINITION | ARGUMENT_DEFINITION'}
      enum DataClass { PUBLIC INTERNAL PERSONAL SECRET BIOMETRIC }
      input Filter { and: [Filter!] @privacy(class: PUBLIC) note: String @privacy(class: PERSONAL) }
      type Query { find(filter: Filter): Int }`;
    expect(() => buildIR(fixtureInputs({}, recursive))).toThrow(
      /Input type Filter contains itself \(Filter → Filter\)/,
    );
  });
});
