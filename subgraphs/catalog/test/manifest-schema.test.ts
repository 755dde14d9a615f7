/** The published JSON Schema of the plugin manifest is exactly what its zod schema says (regenerate when not). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MANIFEST_SCHEMA_FILE, manifestJsonSchemaText } from '../src/analyzer/manifest-json-schema.js';
import { PluginManifest } from '../src/analyzer/manifest.mjs';

describe('plugin manifest schema', () => {
  it('schemas/plugin-manifest.schema.json is generated from the zod schema', () => {
    // Compared as JSON: prettier may lay the file out differently.
    expect(
      JSON.parse(readFileSync(MANIFEST_SCHEMA_FILE, 'utf8')),
      'run: npx tsx subgraphs/catalog/scripts/write-manifest-schema.ts',
    ).toEqual(JSON.parse(manifestJsonSchemaText()));
  });

  it('accepts a minimal manifest and refuses unknown fields, bad paths and unknown capabilities', () => {
    const ok = { name: 'web-search', version: '1.2.0-beta.1', main: 'dist/index.js' };
    expect(PluginManifest.parse(ok)).toEqual({ ...ok, capabilities: [] });
    for (const bad of [
      { ...ok, extra: true },
      { ...ok, main: '../index.js' },
      { ...ok, main: '/index.js' },
      { ...ok, main: 'a/../../index.js' },
      { ...ok, main: 'index.ts' },
      { ...ok, capabilities: ['shell'] },
      { ...ok, version: '1.2' },
      { ...ok, name: 'Web' },
    ]) {
      expect(PluginManifest.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
});
