/**
 * SDK overhead per call over plain `fetch`:
 * `npx tsx --conditions=@agentgraph/source bench/src/sdk-overhead.ts [--calls 5000]` prints JSON (the condition
 * resolves the SDK packages to their sources, sdk-templates/typescript/README.md).
 *
 * A loopback HTTP server answers every POST with the same small GraphQL result. The same query and the same
 * idempotent mutation are sent N times, one at a time (no concurrency, so the difference is per-call work, not
 * queueing), by (a) plain fetch with a hand-built body, (b) the generated SDK's client (privacy gate, key creation,
 * retry bookkeeping, response parsing, typed errors, metadata logging off). Reported: µs per call (median of 5
 * rounds, interleaved) and the SDK's extra µs and CPU per call.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { AgentGraph, operations } from '../../sdks/typescript/src/index.js';

const { values } = parseArgs({
  options: { calls: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '5' } },
});
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);

const answer = JSON.stringify({
  data: { viewer: { user: { id: 'u1', email: 'ada@example.com', displayName: 'Ada' } } },
});
const mutationAnswer = JSON.stringify({
  data: {
    createRoom: {
      room: { id: 'r1', name: 'bench', createdAt: '2026-11-29T00:00:00.000Z', createdBy: { id: 'u1' } },
    },
  },
});
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    res
      .writeHead(200, { 'content-type': 'application/graphql-response+json' })
      .end(body.includes('mutation') ? mutationAnswer : answer);
  });
});
server.keepAliveTimeout = 60_000;
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;

const sdk = new AgentGraph({
  baseUrl: url,
  tokenProvider: { getToken: async () => 'bench-token', refresh: async () => 'bench-token' },
});
const viewerDoc = operations.Viewer?.document;
const createRoomDoc = operations.CreateRoom?.document;
if (!viewerDoc || !createRoomDoc) throw new Error('the generated SDK has no Viewer / CreateRoom operation');

async function plain(mutation: boolean): Promise<void> {
  const key = mutation ? crypto.randomUUID() : undefined;
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      authorization: 'Bearer bench-token',
      ...(key ? { 'idempotency-key': key } : {}),
    },
    body: JSON.stringify(
      mutation
        ? { query: createRoomDoc, variables: { input: { name: 'bench' }, idempotencyKey: key } }
        : { query: viewerDoc, variables: {} },
    ),
  });
  await res.json();
}

async function viaSdk(mutation: boolean): Promise<void> {
  if (mutation) await sdk.createRoom({ input: { name: 'bench' } });
  else await sdk.viewer({});
}

async function measure(fn: (mutation: boolean) => Promise<void>, mutation: boolean) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) await fn(mutation);
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { usPerCall: (wall * 1000) / CALLS, cpuUsPerCall: (cpu.user + cpu.system) / CALLS };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const result: Record<string, unknown> = { calls: CALLS, rounds: ROUNDS, node: process.version };
for (const mutation of [false, true]) {
  // Warm-up, then interleaved rounds so slow drifts hit both alike. (The server shares this process, so the CPU
  // figures include its work for both clients alike; the difference is the SDK's.)
  await measure(plain, mutation);
  await measure(viaSdk, mutation);
  const p: { usPerCall: number; cpuUsPerCall: number }[] = [];
  const s: { usPerCall: number; cpuUsPerCall: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    p.push(await measure(plain, mutation));
    s.push(await measure(viaSdk, mutation));
  }
  const plainUs = median(p.map((x) => x.usPerCall));
  const sdkUs = median(s.map((x) => x.usPerCall));
  const plainCpu = median(p.map((x) => x.cpuUsPerCall));
  const sdkCpu = median(s.map((x) => x.cpuUsPerCall));
  result[mutation ? 'mutation' : 'query'] = {
    plainFetchUsPerCall: Math.round(plainUs),
    sdkUsPerCall: Math.round(sdkUs),
    sdkExtraUsPerCall: Math.round(sdkUs - plainUs),
    plainCpuUsPerCall: Math.round(plainCpu),
    sdkCpuUsPerCall: Math.round(sdkCpu),
    sdkExtraCpuUsPerCall: Math.round(sdkCpu - plainCpu),
  };
}
server.close();
console.log(JSON.stringify(result, null, 2));
