/** The public `capabilities` query: what clients must honour, straight from the validated config. */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Config } from '@agentgraph/runtime';
import type { Capabilities } from './generated/resolvers.js';

export const API_SCHEMA_FILE = new URL('../../../schemas/api.graphql', import.meta.url);

let cachedVersion: string | null = null;

/** First 12 hex digits of the SHA-256 of schemas/api.graphql as deployed (read once per process). */
export function schemaVersion(): string {
  cachedVersion ??= createHash('sha256').update(readFileSync(API_SCHEMA_FILE)).digest('hex').slice(0, 12);
  return cachedVersion;
}

export function capabilitiesOf(config: Config): Capabilities {
  return {
    schemaVersion: schemaVersion(),
    limits: { ...config.limits },
    idempotencyRetentionSeconds: config.idempotencyRetentionSeconds,
    client: { ...config.client },
  };
}
