/** The benchmark's queries (the same for every target of a group). */

/** The two-subgraph nested query: rooms and messages from coordination, each author's displayName from identity. */
export const GATEWAY_QUERY =
  '{ rooms(first: 5) { edges { node { name messages(first: 5) { edges { node { body author { displayName } } } } } } } }';

/** The same shape, answerable by the coordination subgraph alone (author is a User stub: id only). */
export const DIRECT_QUERY =
  '{ rooms(first: 5) { edges { node { name messages(first: 5) { edges { node { body author { id } } } } } } } }';

/** Server overhead without the database: parse/validate cache, context (token verification), execute, serialize. */
export const TRIVIAL_QUERY = '{ __typename }';
