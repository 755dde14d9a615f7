/**
 * Writes schemas/plugin-manifest.schema.json from the zod schema (src/analyzer/manifest.mjs), the published form of
 * the plugin manifest's rules. `npx tsx subgraphs/catalog/scripts/write-manifest-schema.ts`; a test fails when the
 * file and the schema differ.
 */
import { writeFileSync } from 'node:fs';
import { manifestJsonSchemaText, MANIFEST_SCHEMA_FILE } from '../src/analyzer/manifest-json-schema.js';

writeFileSync(MANIFEST_SCHEMA_FILE, manifestJsonSchemaText());
console.log(`wrote ${MANIFEST_SCHEMA_FILE}`);
