/** A small schema of our own for the generator's unit tests: every construct the real API does not have yet. */
import { readFileSync } from 'node:fs';
import { ErrorTableSchema, type SdkInputs } from '../src/sdk/inputs.js';

export const ROOT = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');

export const FIXTURE_SDL = `
directive @privacy(class: DataClass!) on INPUT_FIELD_DEFINITION | ARGUMENT_DEFINITION
enum DataClass { PUBLIC INTERNAL PERSONAL SECRET BIOMETRIC }
scalar JSON
type PageInfo { hasNextPage: Boolean! endCursor: String }
interface Node { id: ID! }
type Note implements Node { id: ID! text: String! meta: JSON }
type File implements Node { id: ID! size: Int! }
union Item = Note | File
type NoteEdge { cursor: String! node: Note! }
type NoteConnection { edges: [NoteEdge!]! pageInfo: PageInfo! }
type Folder { id: ID! name: String! notes(first: Int, after: String): NoteConnection! items: [Item!]! old: String @deprecated(reason: "Use name.") }
input TagInput { label: String! @privacy(class: PUBLIC) secret: String @privacy(class: SECRET) }
input NoteInput {
  text: String! @privacy(class: PERSONAL)
  tags: [TagInput!] @privacy(class: INTERNAL)
  face: String @privacy(class: BIOMETRIC)
}
type Query {
  folder(id: ID!): Folder
  node(id: ID!): Node
  items: [Item!]!
  search(q: String! @privacy(class: PERSONAL)): [Node!]!
  notes(first: Int = 20, after: String): NoteConnection!
}
type Mutation {
  addNote(folderId: ID!, input: NoteInput!, idempotencyKey: ID!): Note!
  ping: Boolean!
}
type Subscription { noteAdded(folderId: ID!): Note! }
`;

export const errorTable = ErrorTableSchema.parse(
  JSON.parse(readFileSync(`${ROOT}/schemas/errors.json`, 'utf8')),
);

export function fixtureInputs(operations: Record<string, string> = {}, sdl = FIXTURE_SDL): SdkInputs {
  return {
    apiSdl: sdl,
    operationFiles: Object.entries(operations).map(([name, text]) => ({
      path: `schemas/operations/${name}`,
      text,
    })),
    errorTable,
  };
}
