// @ts-check
/**
 * The plugin manifest (`manifest.json` at the root of a package), as a zod schema. Plain JavaScript because the
 * sandboxed analyzer runs under bare `node` (no TypeScript loader); its types are in manifest.d.mts. The JSON
 * Schema published from it is schemas/plugin-manifest.schema.json in this package (kept equal by a test).
 */
import { z } from 'zod';

/** Capabilities a plugin may declare; the static checks refuse code that uses one it did not declare. */
export const CAPABILITIES = /** @type {const} */ (['fs', 'network', 'clipboard', 'notifications']);

const SEMVER =
  /^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?$/;

export const PluginManifest = z
  .object({
    name: z.string().regex(/^[a-z][a-z0-9-]{1,62}$/),
    version: z.string().max(64).regex(SEMVER),
    displayName: z.string().min(1).max(100).optional(),
    description: z.string().max(2000).optional(),
    /** The entry module, relative to the package root. */
    main: z
      .string()
      .min(1)
      .max(256)
      .regex(/^(?!\/)(?!.*(?:^|\/)\.\.(?:\/|$))[A-Za-z0-9._/-]+\.(?:js|mjs|cjs)$/),
    capabilities: z.array(z.enum(CAPABILITIES)).max(CAPABILITIES.length).default([]),
  })
  .strict();
