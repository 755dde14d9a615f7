/**
 * Composition: supergraph.yaml (Rover's format) → schemas/supergraph.graphql and schemas/api.graphql.
 * Every composition hint must be removed or listed with a reason in schemas/compose-hints.yaml.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { composeServices } from '@apollo/composition';
import { printSchema } from '@apollo/federation-internals';
import { parse } from 'graphql';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { addPrivacyToApiSchema } from './privacy-in-api.js';

const SupergraphConfig = z.object({
  federation_version: z.string(),
  subgraphs: z.record(
    z.string().regex(/^[a-z][a-z0-9_]*$/),
    z.object({ routing_url: z.string().url(), schema: z.object({ file: z.string() }) }),
  ),
});

const HintAllowlist = z.object({
  allow: z.array(z.object({ code: z.string(), match: z.string(), reason: z.string().min(10) })).default([]),
});

export interface SubgraphSource {
  name: string;
  url: string;
  file: string;
  sdl: string;
}

export interface CompositionHint {
  code: string;
  message: string;
  allowedBecause?: string;
}

export interface CompositionResult {
  subgraphs: SubgraphSource[];
  supergraphSdl: string;
  apiSdl: string;
  hints: CompositionHint[];
}

export function readSupergraphConfig(configPath: string): SubgraphSource[] {
  const cfg = SupergraphConfig.parse(parseYaml(readFileSync(configPath, 'utf8')));
  const base = dirname(configPath);
  return Object.entries(cfg.subgraphs).map(([name, s]) => {
    const file = resolve(base, s.schema.file);
    return { name, url: s.routing_url, file, sdl: readFileSync(file, 'utf8') };
  });
}

export function compose(configPath: string, allowlistPath?: string): CompositionResult {
  const subgraphs = readSupergraphConfig(configPath);
  const result = composeServices(
    subgraphs.map((s) => ({ name: s.name, url: s.url, typeDefs: parse(s.sdl) })),
  );
  if (result.errors) {
    const lines = result.errors.map((e) => `  - ${e.message}`).join('\n');
    throw new Error(`Composition failed with ${result.errors.length} error(s):\n${lines}`);
  }
  const allow = allowlistPath
    ? HintAllowlist.parse(parseYaml(readFileSync(allowlistPath, 'utf8')) ?? {}).allow
    : [];
  const hints = result.hints.map((h) => {
    const code = h.definition.code;
    const entry = allow.find((a) => a.code === code && h.message.includes(a.match));
    return { code, message: h.message, allowedBecause: entry?.reason };
  });
  return {
    subgraphs,
    supergraphSdl: result.supergraphSdl,
    apiSdl: addPrivacyToApiSchema(printSchema(result.schema.toAPISchema()), result.supergraphSdl),
    hints,
  };
}
