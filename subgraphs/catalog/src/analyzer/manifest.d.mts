import type { z } from 'zod';

export declare const CAPABILITIES: readonly ['fs', 'network', 'clipboard', 'notifications'];
export type Capability = (typeof CAPABILITIES)[number];

export interface PluginManifestValue {
  name: string;
  version: string;
  displayName?: string;
  description?: string;
  main: string;
  capabilities: Capability[];
}

export declare const PluginManifest: z.ZodType<PluginManifestValue>;
