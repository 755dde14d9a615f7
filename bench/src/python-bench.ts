/**
 * The Python SDK's benchmark: `npx tsx bench/src/python-bench.ts [--calls 500] [--rounds 5]
 * [--messages 1000] [--rooms 10]` runs sdk-templates/python/bench/sdk_overhead.py with Debian's /usr/bin/python3
 * (the generated SDK in sdks/python and its runtime, the agentgraph-runtime distribution in sdk-templates/python, both
 * from source; Debian's python3-httpx, -tenacity, -jwt, -cryptography), checks its JSON with zod and prints it:
 *
 * - SDK overhead per call: the generated `agentgraph` client vs a plain httpx.AsyncClient POST of the same body
 *   against a loopback http.server in a child process, the same query and idempotent mutation, one call at a time
 *   (µs and CPU µs per call, median of interleaved rounds);
 * - outbox throughput: enqueue and drain (stub send) through the sqlite3 outbox, synchronous FULL and NORMAL
 *   (messages/s).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { z } from 'zod';
import { REPO_ROOT } from './lib/proc.js';
import {
  countFlags,
  OutboxThroughput as Throughput,
  SdkPerCall,
  sdkBenchCounts,
} from './lib/sdk-bench-counts.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = join(REPO_ROOT, 'sdk-templates/python/bench/sdk_overhead.py');

const counts = sdkBenchCounts({ calls: 500, rounds: 5, messages: 1000, rooms: 10 });

const stdout = execFileSync(PYTHON, [SCRIPT, ...countFlags(counts)], {
  cwd: REPO_ROOT,
  env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
});

const PerCall = SdkPerCall.extend({
  plainHttpxUsPerCall: z.number(),
  roundsUs: z.object({ plain: z.array(z.number()), sdk: z.array(z.number()) }),
});
const result = z
  .object({
    calls: z.number(),
    rounds: z.number(),
    python: z.string(),
    httpx: z.string(),
    sqlite: z.string(),
    processors: z.number(),
    query: PerCall,
    mutation: PerCall,
    serverRequests: z.number(),
    outbox: z.object({
      messages: z.number(),
      rooms: z.number(),
      synchronousFull: Throughput,
      synchronousNormal: Throughput,
    }),
  })
  .parse(JSON.parse(stdout));
console.log(JSON.stringify(result, null, 2));
