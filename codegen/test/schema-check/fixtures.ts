/**
 * Schema pairs with their expected classification. Each case is the base fixture (one subgraph `main`, one curated
 * operation `GetNote`) with edits applied to the head (and optionally to the base), plus the allowlist it needs.
 */

export const BASE_SDL = `extend schema
  @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@shareable", "@composeDirective"])
  @link(url: "https://agentgraph.dev/privacy/v1.0", import: ["@privacy"])
  @composeDirective(name: "@privacy")

directive @privacy(class: DataClass!) on INPUT_FIELD_DEFINITION | ARGUMENT_DEFINITION

enum DataClass {
  PUBLIC
  INTERNAL
  PERSONAL
  SECRET
  BIOMETRIC
}

type PageInfo @shareable {
  hasNextPage: Boolean!
  endCursor: String
}

type Query {
  note(id: ID!): Note
  notes(first: Int = 20, after: String): NoteConnection!
}

type Mutation {
  createNote(input: CreateNoteInput!, idempotencyKey: ID!): CreateNotePayload!
}

type Note @key(fields: "id") {
  id: ID!
  title: String!
  body: String
  status: NoteStatus!
}

enum NoteStatus {
  DRAFT
  PUBLISHED
}

type NoteConnection {
  edges: [NoteEdge!]!
  pageInfo: PageInfo!
}

type NoteEdge {
  cursor: String!
  node: Note!
}

input CreateNoteInput {
  title: String! @privacy(class: INTERNAL)
  body: String @privacy(class: PERSONAL)
}

type CreateNotePayload {
  note: Note!
}
`;

export const BASE_OPERATIONS = `# One note by id.
query GetNote($id: ID!) {
  note(id: $id) {
    id
    title
    status
  }
}
`;

/** [search, replacement]: each search must occur in the SDL (the harness checks, so a typo cannot pass). */
export type Edit = [string, string];

export interface Expected {
  /** API coordinates classified breaking (exactly these). */
  breaking?: string[];
  /** API coordinates classified dangerous (exactly these). */
  dangerous?: string[];
  /** API coordinates classified safe (at least these). */
  safe?: string[];
  /** `rule coordinate` of every violation (exactly these). */
  violations?: string[];
  /** coordinate → the SDK methods / operations its finding must name. */
  touches?: Record<string, string[]>;
  /** A breaking change let through by the allowlist. */
  allowed?: string[];
  ok: boolean;
}

export interface FixtureCase {
  name: string;
  head?: Edit[];
  base?: Edit[];
  /** Extra subgraphs of the head, name → SDL. */
  headSubgraphs?: Record<string, string>;
  headOperations?: string;
  allowlist?: string;
  expect: Expected;
}

const REMOVE_BODY: Edit = ['  body: String\n  status', '  status'];
const DEPRECATE_BODY: Edit = ['  body: String\n', '  body: String @deprecated(reason: "use title")\n'];

export const CASES: FixtureCase[] = [
  { name: 'identical schemas', expect: { breaking: [], dangerous: [], violations: [], ok: true } },
  {
    name: 'field removed',
    head: [REMOVE_BODY],
    expect: { breaking: ['Note.body'], violations: [], touches: { 'Note.body': ['notes()'] }, ok: false },
  },
  {
    name: 'field added',
    head: [['  status: NoteStatus!\n}', '  status: NoteStatus!\n  summary: String\n}']],
    expect: { breaking: [], dangerous: [], safe: ['Note.summary'], violations: [], ok: true },
  },
  {
    name: 'required argument added',
    head: [['note(id: ID!)', 'note(id: ID!, revision: Int!)']],
    expect: {
      breaking: ['Query.note.revision'],
      touches: { 'Query.note.revision': ['getNote()'] },
      ok: false,
    },
  },
  {
    name: 'optional argument added',
    head: [['note(id: ID!)', 'note(id: ID!, revision: Int)']],
    expect: { breaking: [], violations: [], ok: true },
  },
  {
    name: 'enum value removed',
    head: [['  DRAFT\n  PUBLISHED\n', '  DRAFT\n']],
    expect: {
      breaking: ['NoteStatus.PUBLISHED'],
      touches: { 'NoteStatus.PUBLISHED': ['getNote()'] },
      ok: false,
    },
  },
  {
    name: 'enum value added',
    head: [['  DRAFT\n  PUBLISHED\n', '  DRAFT\n  PUBLISHED\n  ARCHIVED\n']],
    expect: {
      breaking: [],
      dangerous: ['NoteStatus.ARCHIVED'],
      touches: { 'NoteStatus.ARCHIVED': ['getNote()', 'notes()'] },
      violations: [],
      ok: true,
    },
  },
  {
    name: 'output nullability tightened (safe)',
    head: [['  body: String\n  status', '  body: String!\n  status']],
    expect: { breaking: [], safe: ['Note.body'], violations: [], ok: true },
  },
  {
    name: 'output nullability loosened (breaking)',
    head: [['  title: String!\n  body: String\n', '  title: String\n  body: String\n']],
    expect: { breaking: ['Note.title'], touches: { 'Note.title': ['getNote()', 'notes()'] }, ok: false },
  },
  {
    name: 'input nullability tightened (breaking)',
    head: [['body: String @privacy', 'body: String! @privacy']],
    expect: {
      breaking: ['CreateNoteInput.body'],
      touches: { 'CreateNoteInput.body': ['createNote()'] },
      ok: false,
    },
  },
  {
    name: 'input nullability loosened (safe)',
    head: [['title: String! @privacy', 'title: String @privacy']],
    expect: { breaking: [], safe: ['CreateNoteInput.title'], violations: [], ok: true },
  },
  {
    name: 'deprecation added',
    head: [DEPRECATE_BODY],
    expect: { breaking: [], violations: [], ok: true },
  },
  {
    name: 'deprecated in the base, removed, listed in the allowlist',
    base: [DEPRECATE_BODY],
    head: [REMOVE_BODY],
    allowlist: 'allow:\n  - coordinate: Note.body\n    reason: deprecated in 0.3, no client reads it\n',
    expect: { breaking: [], allowed: ['Note.body'], violations: [], ok: true },
  },
  {
    name: 'deprecated in the base, removed, not in the allowlist',
    base: [DEPRECATE_BODY],
    head: [REMOVE_BODY],
    expect: { breaking: ['Note.body'], violations: [], ok: false },
  },
  {
    name: 'removed without deprecation although in the allowlist',
    head: [REMOVE_BODY],
    allowlist: 'allow:\n  - coordinate: Note.body\n    reason: deprecated in 0.3, no client reads it\n',
    expect: { breaking: ['Note.body'], violations: ['allowlist Note.body'], ok: false },
  },
  {
    name: 'type removed',
    head: [
      [
        '  createNote(input: CreateNoteInput!, idempotencyKey: ID!): CreateNotePayload!\n',
        '  ping(idempotencyKey: ID!): PingPayload!\n',
      ],
      ['type CreateNotePayload {\n  note: Note!\n}\n', 'type PingPayload {\n  ok: Boolean!\n}\n'],
      [
        'input CreateNoteInput {\n  title: String! @privacy(class: INTERNAL)\n  body: String @privacy(class: PERSONAL)\n}\n',
        '',
      ],
    ],
    expect: {
      breaking: ['CreateNoteInput', 'CreateNotePayload', 'Mutation.createNote'],
      touches: { 'Mutation.createNote': ['createNote()'] },
      ok: false,
    },
  },
  {
    name: 'field type changed',
    head: [['  body: String\n  status', '  body: Int\n  status']],
    expect: { breaking: ['Note.body'], ok: false },
  },
  {
    name: 'argument default changed (dangerous)',
    head: [['notes(first: Int = 20', 'notes(first: Int = 50']],
    expect: {
      breaking: [],
      dangerous: ['Query.notes.first'],
      touches: { 'Query.notes.first': ['notes()'] },
      ok: true,
    },
  },
  {
    name: 'mutation without idempotencyKey',
    head: [
      ['type Mutation {\n', 'type Mutation {\n  deleteNote(id: ID!): DeleteNotePayload!\n'],
      ['type CreateNotePayload', 'type DeleteNotePayload {\n  ok: Boolean!\n}\n\ntype CreateNotePayload'],
    ],
    expect: { breaking: [], violations: ['idempotency-key Mutation.deleteNote'], ok: false },
  },
  {
    name: 'idempotencyKey that is nullable',
    head: [['idempotencyKey: ID!): CreateNotePayload!', 'idempotencyKey: ID): CreateNotePayload!']],
    expect: { violations: ['idempotency-key Mutation.createNote.idempotencyKey'], ok: false },
  },
  {
    name: 'a plain list that should be a connection',
    head: [['type Query {\n', 'type Query {\n  allNotes: [Note!]!\n']],
    expect: { breaking: [], violations: ['connection Query.allNotes'], ok: false },
  },
  {
    name: 'a connection without first',
    head: [['notes(first: Int = 20, after: String)', 'notes(after: String)']],
    expect: { breaking: ['Query.notes.first'], violations: ['connection Query.notes'], ok: false },
  },
  {
    name: 'an input field without @privacy',
    head: [
      [
        '  body: String @privacy(class: PERSONAL)\n',
        '  body: String @privacy(class: PERSONAL)\n  tag: String\n',
      ],
    ],
    expect: { breaking: [], violations: ['privacy CreateNoteInput.tag'], ok: false },
  },
  {
    name: 'a String argument without @privacy',
    head: [['note(id: ID!)', 'note(id: ID!, hint: String)']],
    expect: { breaking: [], violations: ['privacy Query.note.hint'], ok: false },
  },
  {
    name: 'an entity without @key',
    head: [
      [
        '  status: NoteStatus!\n}',
        '  status: NoteStatus!\n  tag: Tag\n}\n\ntype Tag {\n  id: ID!\n  label: String!\n}',
      ],
    ],
    expect: { breaking: [], violations: ['entity-key Tag'], ok: false },
  },
  {
    name: 'naming: field, enum value, input, payload',
    head: [
      ['  DRAFT\n  PUBLISHED\n', '  DRAFT\n  PUBLISHED\n  inReview\n'],
      ['  status: NoteStatus!\n}', '  status: NoteStatus!\n  word_count: Int\n}'],
      ['input CreateNoteInput', 'input NoteDraft'],
      ['createNote(input: CreateNoteInput!', 'createNote(input: NoteDraft!'],
      ['CreateNotePayload', 'CreateNoteResult'],
      ['CreateNotePayload', 'CreateNoteResult'],
    ],
    expect: {
      violations: [
        'naming NoteStatus.inReview',
        'naming Note.word_count',
        'naming NoteDraft',
        'naming Mutation.createNote',
      ],
      ok: false,
    },
  },
  {
    name: 'a curated operation that no longer validates',
    base: [['  status: NoteStatus!\n', '  status: NoteStatus! @deprecated(reason: "gone")\n']],
    head: [['  status: NoteStatus!\n', '']],
    allowlist: 'allow:\n  - coordinate: Note.status\n    reason: deprecated for a release, replaced later\n',
    expect: {
      breaking: [],
      allowed: ['Note.status'],
      violations: ['operation schemas/operations/notes.graphql:6'],
      ok: false,
    },
  },
  {
    name: 'a composition error',
    headSubgraphs: {
      other: `extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])

type Note @key(fields: "id") {
  id: ID!
  title: Int!
}
`,
    },
    expect: { violations: ['composition supergraph.yaml'], ok: false },
  },
];
