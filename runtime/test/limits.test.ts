import { Kind, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { checkDocumentLimits, usesVariablePageArgs, type DocumentLimits } from '../src/limits.js';
import { expectAppError } from './helpers.js';

const limits: DocumentLimits = { maxDepth: 4, maxAliases: 3, maxPageSize: 100 };

function check(query: string, variables?: Record<string, unknown>, operationName?: string) {
  return () => checkDocumentLimits(parse(query), operationName, variables, limits);
}

describe('checkDocumentLimits: depth', () => {
  // Depth counts the fields that have a selection set along a path: `{ a { b } }` is 1 deep.
  it('accepts a document at the limit', () => {
    expect(check('{ a { b { c { d { leaf } } } } }')).not.toThrow();
  });

  it('rejects one level more with QUERY_TOO_COMPLEX', async () => {
    const e = await expectAppError(check('{ a { b { c { d { e { leaf } } } } } }'), 'QUERY_TOO_COMPLEX');
    expect(e.extensions).toMatchObject({ limit: 'maxDepth', max: 4 });
  });

  it('counts depth through named fragments', async () => {
    await expectAppError(
      check(`
        query { a { ...F } }
        fragment F on T { b { ...G } }
        fragment G on T { c { d { e { leaf } } } }
      `),
      'QUERY_TOO_COMPLEX',
    );
    expect(check('query { a { ...F } } fragment F on T { b { c { d { leaf } } } }')).not.toThrow();
  });

  it('counts depth through inline fragments without adding a level for the fragment itself', async () => {
    expect(check('{ a { ... on T { b { ... on U { c { d { leaf } } } } } } }')).not.toThrow();
    await expectAppError(
      check('{ a { ... on T { b { ... on U { c { d { e { leaf } } } } } } } }'),
      'QUERY_TOO_COMPLEX',
    );
  });

  it('counts a fragment used at several depths at each of them', async () => {
    const frag = 'fragment F on T { x { y { leaf } } }';
    expect(check(`{ a { ...F } b { c { ...F } } } ${frag}`)).not.toThrow();
    await expectAppError(check(`{ a { ...F } b { c { d { ...F } } } } ${frag}`), 'QUERY_TOO_COMPLEX');
  });

  it('checks the selected operation only', () => {
    const doc = 'query Small { a } query Deep { a { b { c { d { e { leaf } } } } } }';
    expect(check(doc, {}, 'Small')).not.toThrow();
    expect(() => check(doc, {}, 'Deep')()).toThrow();
  });

  it('leaves a missing or ambiguous operation to validation', () => {
    expect(check('query A { a } query B { b }')).not.toThrow();
    expect(check('query A { a }', {}, 'Nope')).not.toThrow();
  });

  it('does not hang on cyclic fragments (validation rejects them)', () => {
    expect(
      check('query { a { ...A } } fragment A on T { x { ...B } } fragment B on T { y { ...A } }'),
    ).not.toThrow();
    expect(check('query { a { ...C } } fragment C on T { ...C z }')).not.toThrow();
    expect(
      check('query { ...A } fragment A on Query { ...B } fragment B on Query { ...A ...B }'),
    ).not.toThrow();
  });

  it('reads each fragment once however often it is spread (no walk over every path)', () => {
    // n fragments that each spread the next one twice: 2^n paths in a valid document of a few hundred bytes
    // (at n = 40 the old path-by-path walk would have kept the event loop busy for days).
    const n = 16;
    const frags = Array.from(
      { length: n },
      (_, i) => `fragment F${i} on Query { ${i + 1 < n ? `...F${i + 1} ...F${i + 1}` : 'leaf'} }`,
    );
    const doc = parse(`query { ...F0 } ${frags.join(' ')}`);
    let reads = 0;
    for (const def of doc.definitions) {
      if (def.kind !== Kind.FRAGMENT_DEFINITION) continue;
      const selections = def.selectionSet.selections;
      Object.defineProperty(def.selectionSet, 'selections', {
        get: () => {
          reads++;
          return selections;
        },
      });
    }
    expect(() => checkDocumentLimits(doc, undefined, {}, limits)).not.toThrow();
    expect(reads).toBe(n);
  });
});

describe('checkDocumentLimits: aliases', () => {
  it('accepts up to the limit and rejects more with QUERY_TOO_COMPLEX', async () => {
    expect(check('{ a: x b: x c: x }')).not.toThrow();
    const e = await expectAppError(check('{ a: x b: x c: x d: x }'), 'QUERY_TOO_COMPLEX');
    expect(e.extensions).toMatchObject({ limit: 'maxAliases', max: 3 });
  });

  it('counts aliases at every level and inside fragments, once per use', async () => {
    await expectAppError(check('{ a: x { b: y { c: z { d: w } } } }'), 'QUERY_TOO_COMPLEX');
    await expectAppError(
      check('{ one { ...F } two { ...F } } fragment F on T { a: x b: x }'),
      'QUERY_TOO_COMPLEX',
    );
    expect(
      check('{ one { ...F } two { ...G } } fragment F on T { a: x } fragment G on T { ...F b: x }'),
    ).not.toThrow();
  });

  it('counts aliases expanded through fanned-out fragments without walking every path', async () => {
    const n = 40;
    const frags = Array.from(
      { length: n },
      (_, i) => `fragment F${i} on Query { ${i + 1 < n ? `...F${i + 1} ...F${i + 1}` : 'a: leaf'} }`,
    );
    await expectAppError(check(`query { ...F0 } ${frags.join(' ')}`), 'QUERY_TOO_COMPLEX');
  });
});

describe('checkDocumentLimits: page size', () => {
  it('accepts first/last within the cap', () => {
    expect(check('{ list(first: 100) { n } other(last: 0) { n } }')).not.toThrow();
  });

  it('rejects a literal first or last over the cap with BAD_USER_INPUT', async () => {
    const e = await expectAppError(check('{ list(first: 100000) { n } }'), 'BAD_USER_INPUT');
    expect(e.extensions).toMatchObject({ limit: 'maxPageSize', max: 100, argument: 'first' });
    await expectAppError(check('{ a { list(last: 101) { n } } }'), 'BAD_USER_INPUT');
    await expectAppError(check('{ list(first: -1) { n } }'), 'BAD_USER_INPUT');
  });

  it('rejects a page size given in a variable', async () => {
    const q = 'query ($n: Int) { list(first: $n) { n } }';
    expect(check(q, { n: 10 })).not.toThrow();
    await expectAppError(check(q, { n: 100_000 }), 'BAD_USER_INPUT');
  });

  it('checks a page size inside a fragment once, wherever the fragment is spread', async () => {
    const doc = '{ a { ...F } b { ...F } } fragment F on T { list(first: $n) { n } }';
    expect(check(doc, { n: 100 })).not.toThrow();
    await expectAppError(check(doc, { n: 101 }), 'BAD_USER_INPUT');
  });

  it('rejects a page size inside a fragment', async () => {
    await expectAppError(check('{ ...F } fragment F on Query { list(first: 500) { n } }'), 'BAD_USER_INPUT');
  });

  it('counts a variable the request leaves out with its default; the static pass (no variables) skips it', async () => {
    const doc = 'query D($n: Int = 500) { list(first: $n) { n } }';
    await expectAppError(check(doc, {}), 'BAD_USER_INPUT');
    expect(check(doc, { n: 10 })).not.toThrow();
    expect(() => checkDocumentLimits(parse(doc), undefined, null, limits)).not.toThrow();
    // A default within the cap passes.
    expect(check('query D($n: Int = 50) { list(first: $n) { n } }', {})).not.toThrow();
  });

  it('tells whether a page size takes a variable (then each request is checked)', () => {
    expect(
      usesVariablePageArgs(parse('query($n: Int) { a { ...F } } fragment F on T { list(first: $n) { n } }')),
    ).toBe(true);
    expect(usesVariablePageArgs(parse('{ list(first: 5) { n } }'))).toBe(false);
  });

  it('ignores other arguments', () => {
    expect(check('{ list(limit: 100000, firstName: 1000) { n } }')).not.toThrow();
  });
});
