/** The DateTime scalar shared by every subgraph: ISO-8601 UTC strings on the wire, Date or string inside. */
import { GraphQLScalarType, Kind } from 'graphql';
import { badInput } from './errors.js';

function toIso(value: unknown): string {
  const d =
    value instanceof Date
      ? value
      : typeof value === 'string' || typeof value === 'number'
        ? new Date(value)
        : null;
  if (!d || Number.isNaN(d.getTime()))
    throw badInput('DateTime must be an ISO-8601 timestamp, e.g. 2026-11-29T13:00:00Z.');
  return d.toISOString();
}

export const DateTimeScalar = new GraphQLScalarType({
  name: 'DateTime',
  description: 'An ISO-8601 UTC timestamp, e.g. 2026-11-29T13:00:00.000Z.',
  serialize: toIso,
  parseValue: (v) =>
    typeof v === 'string'
      ? new Date(toIso(v))
      : (() => {
          throw badInput('DateTime must be a string.');
        })(),
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING) throw badInput('DateTime must be a string.');
    return new Date(toIso(ast.value));
  },
});
