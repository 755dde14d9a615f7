/**
 * The exactly-once run (test/src/exactly-once.ts), end to end, for the generated TypeScript SDK with its durable outbox
 * (test/e2e/fixtures/outbox-poster.ts, better-sqlite3): 2,000 messages through the fault-injecting proxy, the client
 * killed mid-run and restarted on the same outbox; each message held once, in order per room (test/src/exactly-once.ts).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startExactlyOnceBed, TOTAL, type ExactlyOnceBed } from '../src/exactly-once.js';

const POSTER = fileURLToPath(new URL('./fixtures/outbox-poster.ts', import.meta.url));
let bed: ExactlyOnceBed;

beforeAll(async () => {
  bed = await startExactlyOnceBed('exactly-once', 5);
});
afterAll(async () => {
  await bed?.close();
});

describe('exactly once over a bad network, across a client crash', () => {
  it(`delivers ${TOTAL} messages exactly once, in order per room`, async () => {
    // The SDK packages resolve to their sources under this condition (no build step; vitest.config.ts).
    const prefix = ['--conditions=@agentgraph/source', '--import', 'tsx', POSTER];
    const report = await bed.run({ command: process.execPath, prefix });
    console.log(JSON.stringify({ sdk: 'typescript', ...report }));
  }, 600_000);
});
