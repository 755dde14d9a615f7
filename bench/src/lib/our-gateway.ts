/**
 * Our gateway (targets/ours.ts) as the coordination and fan-out benches run it: in front of the bench's subgraphs
 * process, on `port`, with --expose-gc (memory probes) and, when profiling, a CPU profile. It joins `children` (the
 * caller stops them all, also when this throws) and resolves once /readyz answers.
 */
import { join } from 'node:path';
import type { SubgraphsReady } from '../procs/subgraphs.js';
import { cpuProfileFlags } from './profile.js';
import { BENCH_SRC, sleep, spawnChild, type Child } from './proc.js';

export async function startOurGateway(opts: {
  subgraphs: SubgraphsReady;
  port: number;
  runDir: string;
  profile: boolean;
  children: Child[];
}): Promise<Child> {
  const { subgraphs: sg, port, runDir } = opts;
  const gateway = spawnChild({
    name: 'gateway',
    entry: join(BENCH_SRC, 'targets/ours.ts'),
    env: {
      ...Object.fromEntries(
        Object.entries(sg.subgraphUrls).map(([n, u]) => [`SUBGRAPH_${n.toUpperCase()}_URL`, u]),
      ),
      GATEWAY_PORT: String(port),
      HOST: '127.0.0.1',
      TOKEN_ISSUER: sg.tokenIssuer,
      JWKS_URL: sg.jwksUrl,
      DATA_DIR: 'memory://',
      LOG_LEVEL: 'warn',
    },
    logDir: runDir,
    ipc: true,
    nodeFlags: ['--expose-gc', ...(opts.profile ? cpuProfileFlags(runDir, 'gateway') : [])],
  });
  opts.children.push(gateway);
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (r.ok) return gateway;
    } catch {
      /* not yet */
    }
    if (i > 600) throw new Error(`gateway not ready; see ${gateway.logFile}`);
    await sleep(100);
  }
}
