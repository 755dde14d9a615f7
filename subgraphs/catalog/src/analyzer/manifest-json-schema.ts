/** The plugin manifest's JSON Schema (draft 2020-12), generated from its zod schema with z.toJSONSchema. */
import { z } from 'zod';
import { PluginManifest } from './manifest.mjs';

export const MANIFEST_SCHEMA_FILE = new URL('../../schemas/plugin-manifest.schema.json', import.meta.url)
  .pathname;

export function manifestJsonSchemaText(): string {
  const schema = z.toJSONSchema(PluginManifest, { io: 'input' });
  return (
    JSON.stringify(
      {
        ...schema,
        $id: 'https://agentgraph.dev/schemas/plugin-manifest.schema.json',
        title: 'Plugin manifest (manifest.json at the root of a plugin package)',
      },
      null,
      2,
    ) + '\n'
  );
}
