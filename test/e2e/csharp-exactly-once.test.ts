/**
 * The exactly-once run (test/src/exactly-once.ts), end to end, for the C# SDK: the generated SDK with its durable outbox
 * (sdks/csharp/samples/OutboxPoster, Microsoft.Data.Sqlite) posts 2,000 messages to 10 rooms through the
 * fault-injecting proxy (the TypeScript run's mix: 10 % of requests dropped, 10 % of responses dropped after the
 * server committed, 5 % answered 503 with Retry-After) into the real platform; the client process is killed (SIGKILL)
 * mid-run and started again on the same outbox file. The server holds each message exactly once, and every room's
 * messages are in enqueue order. The .NET projects are built once (Release) for this file, then the dll is run.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startExactlyOnceBed, TOTAL, type ExactlyOnceBed } from '../src/exactly-once.js';
import { buildDotnetProject, DOTNET_ENV } from '../src/dotnet-build.js';

const PROJECT = fileURLToPath(new URL('../../sdks/csharp/samples/OutboxPoster/', import.meta.url));
const DLL = join(PROJECT, 'bin/Release/net10.0/OutboxPoster.dll');
let bed: ExactlyOnceBed;

beforeAll(async () => {
  await buildDotnetProject(PROJECT);
  bed = await startExactlyOnceBed('csharp-exactly-once', 9);
}, 300_000);
afterAll(async () => {
  await bed?.close();
});

describe('C# SDK: exactly once over a bad network, across a client crash', () => {
  it(`delivers ${TOTAL} messages exactly once, in order per room`, async () => {
    const report = await bed.run({ command: 'dotnet', prefix: [DLL], env: DOTNET_ENV });
    console.log(JSON.stringify({ sdk: 'csharp', ...report }));
  }, 600_000);
});
