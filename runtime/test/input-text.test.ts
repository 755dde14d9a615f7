/**
 * checkInputText: text the database cannot store (U+0000, unpaired surrogates) in any argument is refused with
 * BAD_USER_INPUT naming the argument path, whether it came as a variable, a literal, a variable's default, inside a
 * nested input, a list, a fragment's field or a custom scalar; good text (emoji included) passes.
 */
import { buildSchema, parse, type GraphQLScalarType } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { AppError } from '../src/errors.js';
import { checkInputText, holdsUnstorableText } from '../src/input-text.js';

const schema = buildSchema(`
  scalar JSON
  enum Kind { A B }
  input TagInput { name: String!, weight: Int }
  input ProfileInput { displayName: String!, tags: [TagInput!], aliases: [String!], kind: Kind, extra: JSON }
  type Room { id: ID!, messages(after: String, first: Int): [String!]! }
  type Query { room(id: ID!): Room, search(text: String!): [String!]!, node(id: ID!): Node }
  interface Node { id: ID!, label(lang: String): String }
  type Mutation { updateProfile(input: ProfileInput!, idempotencyKey: ID!): Boolean }
`);
// JSON as a scalar that takes any value (like a JSON scalar would), so custom scalars are walked in full.
const json = schema.getType('JSON') as GraphQLScalarType;
Object.assign(json, {
  parseValue: (v: unknown) => v,
  parseLiteral: (ast: { kind: string; value?: string }) => (ast.kind === 'StringValue' ? ast.value : null),
});

const UPDATE = `mutation U($input: ProfileInput!, $key: ID!) { updateProfile(input: $input, idempotencyKey: $key) }`;

function check(query: string, variables?: Record<string, unknown>, operationName?: string): AppError | null {
  return checkInputText(schema, parse(query), operationName, variables);
}

function expectRefused(err: AppError | null, field: string, value?: string): void {
  expect(err?.extensions).toEqual({ code: 'BAD_USER_INPUT', field, argument: field });
  expect(err!.message.startsWith(`${field} contains`)).toBe(true);
  if (value) expect(err!.message).not.toContain(value);
}

describe('checkInputText', () => {
  it('refuses a NUL in a variable, naming the input field', () => {
    const err = check(UPDATE, { input: { displayName: 'Ada\u0000Lovelace' }, key: 'k-12345678' });
    expectRefused(err, 'input.displayName', 'Lovelace');
    expect(err!.message).toContain('NUL');
  });

  it('refuses it in a literal, in a list item, in a nested input, in an ID', () => {
    expectRefused(
      check('mutation { updateProfile(input: { displayName: "a\\u0000" }, idempotencyKey: "k-12345678") }'),
      'input.displayName',
    );
    expectRefused(
      check(UPDATE, { input: { displayName: 'ok', aliases: ['fine', 'x\u0000'] }, key: 'k-12345678' }),
      'input.aliases.1',
    );
    expectRefused(
      check(UPDATE, {
        input: { displayName: 'ok', tags: [{ name: 'a' }, { name: 'b\u0000', weight: 1 }] },
        key: 'k-12345678',
      }),
      'input.tags.1.name',
    );
    expectRefused(check(UPDATE, { input: { displayName: 'ok' }, key: 'k-\u0000' }), 'idempotencyKey');
  });

  it('refuses an unpaired surrogate; a pair (an emoji) is fine', () => {
    const err = check(UPDATE, { input: { displayName: 'x\ud800y' }, key: 'k-12345678' });
    expectRefused(err, 'input.displayName');
    expect(err!.message).toContain('surrogate');
    expectRefused(
      check(UPDATE, { input: { displayName: '\udc00' }, key: 'k-12345678' }),
      'input.displayName',
    );
    expect(check(UPDATE, { input: { displayName: 'Ada 😀 Ωμέγα' }, key: 'k-12345678' })).toBeNull();
  });

  it('walks a custom scalar in full, keys included, without putting a bad key in the path', () => {
    expectRefused(
      check(UPDATE, { input: { displayName: 'ok', extra: { a: [{ b: 'c\u0000' }] } }, key: 'k-12345678' }),
      'input.extra.a.0.b',
    );
    expectRefused(
      check(UPDATE, { input: { displayName: 'ok', extra: { 'secret\u0000key': 1 } }, key: 'k-12345678' }),
      'input.extra',
      'secret',
    );
  });

  it('finds arguments of nested fields, fragments and inline fragments, and variable defaults', () => {
    expectRefused(
      check('query Q($a: String) { room(id: "r") { messages(after: $a) } }', { a: '\u0000' }),
      'after',
    );
    expectRefused(
      check(
        'query Q($a: String = "x\\u0000") { room(id: "r") { ...M } } fragment M on Room { messages(after: $a) }',
      ),
      'after',
    );
    expectRefused(
      check('query Q($l: String) { node(id: "n") { ... on Node { label(lang: $l) } } }', { l: '\u0000' }),
      'lang',
    );
  });

  it('checks the operation that runs, and lets execution refuse what does not coerce', () => {
    const doc = 'query A { search(text: "fine") } query B { search(text: "\\u0000") }';
    expect(check(doc, undefined, 'A')).toBeNull();
    expectRefused(check(doc, undefined, 'B'), 'text');
    // $input lacks displayName: graphql-js refuses it during execution (its own BAD_USER_INPUT).
    expect(check(UPDATE, { input: { aliases: ['\u0000'] }, key: 'k-12345678' })).toBeNull();
    // A bad string in a variable the operation does not declare goes nowhere.
    expect(check('{ search(text: "fine") }', { unused: '\u0000' })).toBeNull();
  });

  it('passes ordinary requests', () => {
    expect(
      check(UPDATE, {
        input: { displayName: 'Ada', tags: [{ name: 't' }], kind: 'A', extra: { k: ['v'] } },
        key: 'k-12345678',
      }),
    ).toBeNull();
    expect(check('{ search(text: "tab\\tnewline\\n") room(id: "r") { messages } }')).toBeNull();
  });
});

describe('holdsUnstorableText', () => {
  it('finds a NUL or an unpaired surrogate anywhere in a JSON value, keys included, however deep', () => {
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(holdsUnstorableText(deep)).toBe(true);
    expect(holdsUnstorableText({ a: { '\ud800': 1 } })).toBe(true);
    expect(holdsUnstorableText({ a: ['😀', 1, null, true, { b: 'ok' }] })).toBe(false);
  });
});
