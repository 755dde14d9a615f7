/**
 * Schema diffs with @graphql-inspector/core: the API schema (what clients see; decides breaking) and each
 * subgraph SDL (what the gateway plans against). Subgraph SDLs carry federation directives the graphql-js
 * validator does not know, so they are built with `assumeValidSDL` (composition validates them).
 */
import { diff, type Change } from '@graphql-inspector/core';
import { buildASTSchema, parse, type GraphQLSchema } from 'graphql';

export type Level = 'breaking' | 'dangerous' | 'safe';

export interface SchemaChange {
  /** `api`, or `subgraph <name>`. */
  scope: string;
  level: Level;
  type: string;
  coordinate?: string;
  message: string;
  meta: Record<string, unknown>;
}

export const buildLoose = (sdl: string): GraphQLSchema =>
  buildASTSchema(parse(sdl), { assumeValidSDL: true });

const LEVEL: Record<string, Level> = { BREAKING: 'breaking', DANGEROUS: 'dangerous', NON_BREAKING: 'safe' };

/** The @deprecated directive usage is reported twice (as a deprecation and as a directive usage): keep one. */
const isDeprecatedUsageEcho = (c: Change) =>
  c.type.startsWith('DIRECTIVE_USAGE_') && /(^|\.)@deprecated(\.|$)/.test(c.path ?? '');

export async function diffSchemas(
  scope: string,
  oldSchema: GraphQLSchema | null,
  newSchema: GraphQLSchema | null,
): Promise<SchemaChange[]> {
  const changes = await diff(oldSchema, newSchema);
  return changes
    .filter((c) => !isDeprecatedUsageEcho(c))
    .map((c) => ({
      scope,
      level: LEVEL[c.criticality.level] ?? 'dangerous',
      type: String(c.type),
      coordinate: c.path,
      message: c.message,
      meta: (c.meta ?? {}) as Record<string, unknown>,
    }));
}
