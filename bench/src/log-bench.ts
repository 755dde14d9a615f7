/**
 * The access-log writer: the runtime's own (`createLogger`, runtime/src/log.ts: JSON.stringify, key redaction by
 * pattern, lines batched per event-loop turn onto stdout) against pino 10 configured to write the same line (ISO time,
 * level label, base fields, the correlation id from the request scope, the same credential keys redacted by path,
 * asynchronous sonic-boom on fd 1). Each writer runs in its own child process with stdout on /dev/null, logs `--lines`
 * access lines (default 100,000) inside a request scope, and is timed until its output is flushed. `--rounds` (3) runs
 * the pair interleaved and keeps each writer's median. Prints JSON.
 *
 *   npx tsx bench/src/log-bench.ts [--lines 100000] [--rounds 3]
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createLogger, currentCorrelationId, withCorrelationId } from '@agentgraph/runtime';
import { pino } from 'pino';

type Writer = 'runtime' | 'pino';

const fields = (i: number) => ({
  method: 'POST',
  path: '/graphql',
  operationName: 'CreateIntent',
  status: 200,
  latencyMs: (i % 1000) / 100,
  principal: 'PERSON',
});

/** Logs `lines` access lines, one request scope per line, and resolves once the writer has flushed them. */
async function run(writer: Writer, lines: number): Promise<number> {
  const started = performance.now();
  if (writer === 'runtime') {
    const log = createLogger({ service: 'gateway' });
    for (let i = 0; i < lines; i++) withCorrelationId(`c-${i}`, () => log.info('request', fields(i)));
    // Its lines go out on the next turn of the event loop; wait for stdout to take them.
    await new Promise<void>((r) => setImmediate(r));
    await new Promise<void>((r) => process.stdout.write('', () => r()));
  } else {
    const destination = pino.destination({ fd: 1, sync: false, minLength: 4096 });
    const log = pino(
      {
        base: { service: 'gateway' },
        messageKey: 'msg',
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
        mixin: () => {
          const correlationId = currentCorrelationId();
          return correlationId ? { correlationId } : {};
        },
        // pino redacts by path, not by key pattern: the runtime's pattern covers any depth, these only the top two.
        redact: {
          paths: [
            'authorization',
            'token',
            'password',
            'cookie',
            'idempotencyKey',
            '*.authorization',
            '*.token',
          ],
          censor: '[redacted]',
        },
      },
      destination,
    );
    for (let i = 0; i < lines; i++) withCorrelationId(`c-${i}`, () => log.info(fields(i), 'request'));
    // Ending the stream writes what it buffered (flush(cb) would fsync, which /dev/null refuses).
    await new Promise<void>((resolve) => {
      destination.once('close', () => resolve());
      destination.end();
    });
  }
  return performance.now() - started;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      lines: { type: 'string', default: '100000' },
      rounds: { type: 'string', default: '3' },
      child: { type: 'string' },
    },
  });
  const lines = Number(values.lines);
  if (values.child) {
    const ms = await run(values.child as Writer, lines);
    process.stderr.write(JSON.stringify({ ms }) + '\n');
    return;
  }
  const self = fileURLToPath(import.meta.url);
  const times: Record<Writer, number[]> = { runtime: [], pino: [] };
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const writer of ['runtime', 'pino'] as const) {
      const child = spawnSync(
        process.execPath,
        [...process.execArgv, self, '--child', writer, '--lines', String(lines)],
        { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' },
      );
      if (child.status !== 0) throw new Error(`${writer} failed: ${child.stderr}`);
      times[writer].push((JSON.parse(child.stderr.trim().split('\n').at(-1)!) as { ms: number }).ms);
    }
  }
  const summary = (w: Writer) => ({
    ms: Math.round(median(times[w])),
    linesPerSecond: Math.round(lines / (median(times[w]) / 1000)),
    rounds: times[w].map(Math.round),
  });
  const result = { lines, runtime: summary('runtime'), pino: summary('pino') };
  process.stdout.write(
    JSON.stringify(
      { ...result, pinoOverRuntime: Math.round((result.runtime.ms / result.pino.ms) * 100) / 100 },
      null,
      2,
    ) + '\n',
  );
}

await main();
