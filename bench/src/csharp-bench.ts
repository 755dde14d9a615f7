/**
 * The C# SDK's benchmark: `npx tsx bench/src/csharp-bench.ts [--calls 2000] [--rounds 5] [--messages 2000]
 * [--rooms 10]` builds sdk-templates/csharp/bench/AgentGraph.Sdk.Bench (Release; needs the generated SDK in sdks/csharp,
 * i.e. `npm run codegen` on a fresh tree), runs it and prints its JSON:
 *
 * - SDK overhead per call: the generated client vs a plain HttpClient POST against a loopback HttpListener, the
 *   same query and keyed mutation, one call at a time (µs and CPU µs per call, median of interleaved rounds);
 * - outbox throughput: enqueue and drain (stub send) through the SQLite outbox, synchronous FULL and NORMAL
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

const counts = sdkBenchCounts({ calls: 2000, rounds: 5, messages: 2000, rooms: 10 });

const PROJECT = join(REPO_ROOT, 'sdk-templates/csharp/bench/AgentGraph.Sdk.Bench');
const DLL = join(PROJECT, 'bin/Release/net10.0/AgentGraph.Sdk.Bench.dll');
const env = { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: '1', DOTNET_NOLOGO: '1' };

// One build node, no build servers left running (the machine is shared); build output goes to stderr.
execFileSync(
  'dotnet',
  ['build', PROJECT, '-c', 'Release', '--nologo', '-v', 'q', '-m:1', '--disable-build-servers'],
  {
    env,
    stdio: ['ignore', 2, 'inherit'],
  },
);
const stdout = execFileSync('dotnet', [DLL, ...countFlags(counts)], {
  env,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
});

const PerCall = SdkPerCall.extend({
  plainHttpClientUsPerCall: z.number(),
});
const result = z
  .object({
    calls: z.number(),
    rounds: z.number(),
    dotnet: z.string(),
    processors: z.number(),
    query: PerCall,
    mutation: PerCall,
    outbox: z.object({
      messages: z.number(),
      rooms: z.number(),
      synchronousFull: Throughput,
      synchronousNormal: Throughput,
    }),
  })
  .parse(JSON.parse(stdout));
console.log(JSON.stringify(result, null, 2));
