/**
 * The secret filter's quality and speed: `npx tsx bench/src/secrets-bench.ts [--mb 4] [--rounds 5]` (or
 * `npm run bench -- --secrets`) prints JSON:
 *
 * - per detector table — the memory subgraph's server filter, the TypeScript SDK's detectors (its runtime package,
 *   sdk-templates/typescript) and the Python SDK's (its runtime distribution, sdk-templates/python; through
 *   /usr/bin/python3) — recall and precision on the labelled corpus
 *   (test/secrets-corpus/corpus.json; a secret counts as found only when its labelled detector fires), the
 *   misclassified case ids, and per detector how often it fired on the secrets labelled with it, on other secrets and
 *   on harmless values. The C# SDK is the same table (its test, DetectorCorpusTests, holds it to the same targets);
 * - agreement: the cases where the server filter and the SDK table disagree on "is this a secret";
 * - throughput: MB/s of scanning `--mb` MB of clean mixed text (notes, config lines and the corpus' harmless
 *   look-alikes: what a write that passes looks like, and the slowest case, since every rule reads all of it; text with a
 *   secret stops the SDK's gate at the first hit) and of one long base64 blob (media pasted into a note), in 64 KiB
 *   pieces, median of `--rounds` rounds.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { DETECTORS as SERVER_DETECTORS } from '../../subgraphs/memory/src/secrets/detectors.js';
import { scan } from '../../subgraphs/memory/src/secrets/scan.js';
import { detect } from '../../sdk-templates/typescript/src/detectors.js';
import { REPO_ROOT } from './lib/proc.js';

const { values } = parseArgs({
  options: { mb: { type: 'string', default: '4' }, rounds: { type: 'string', default: '5' } },
});
const MB = Math.max(0.1, Number(values.mb));
const ROUNDS = Math.max(1, Number(values.rounds));

interface Case {
  id: string;
  label: 'secret' | 'harmless';
  detector?: string;
  value: string;
}
const CORPUS = join(REPO_ROOT, 'test/secrets-corpus/corpus.json');
const { cases } = JSON.parse(readFileSync(CORPUS, 'utf8')) as { cases: Case[] };

/** What a table says about one case: the rule ids that fired (SDK ids) and whether the value is refused. */
interface Verdict {
  ids: string[];
  flagged: boolean;
}

function score(verdicts: Verdict[]) {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  let tn = 0;
  const missed: string[] = [];
  const falsePositives: string[] = [];
  const perDetector: Record<string, { onItsSecrets: number; onOtherSecrets: number; onHarmless: number }> =
    {};
  const count = (id: string) => (perDetector[id] ??= { onItsSecrets: 0, onOtherSecrets: 0, onHarmless: 0 });
  cases.forEach((c, i) => {
    const v = verdicts[i]!;
    for (const id of new Set(v.ids)) {
      if (c.label === 'harmless') count(id).onHarmless++;
      else if (id === c.detector) count(id).onItsSecrets++;
      else count(id).onOtherSecrets++;
    }
    if (c.label === 'secret') {
      if (v.flagged && v.ids.includes(c.detector!)) tp++;
      else {
        fn++;
        missed.push(c.id);
      }
    } else if (v.flagged) {
      fp++;
      falsePositives.push(c.id);
    } else tn++;
  });
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return {
    cases: cases.length,
    recall: r(tp / (tp + fn)),
    precision: r(tp / (tp + fp)),
    tp,
    fp,
    fn,
    tn,
    missed,
    falsePositives,
    perDetector,
  };
}

// ---- the text scanned for throughput ------------------------------------------------------------------------------
const PROSE = [
  'Deploy finished in 42s; 3 pods rolled. The meeting moved to 3 pm; bring the 2024 report.',
  'Customer asked about the invoice for March; see https://example.com:8443/orders?page=3&per_page=50.',
  'LOG_LEVEL=debug\nNODE_ENV=production\nPORT=8080\nDATABASE_HOST=db.internal\n',
  'The access token expires after 3600 seconds; rotate the signing key every 90 days.',
  'commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed the retry loop in the outbox worker.',
];
const HARMLESS = cases.filter((c) => c.label === 'harmless').map((c) => c.value);
/** Text a write that passes is made of: notes, config lines and the corpus' look-alikes (nothing to find, so every rule reads all of it). */
function mixedText(bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const part = i % 4 === 3 ? HARMLESS[(i * 7) % HARMLESS.length]! : PROSE[i % PROSE.length]!;
    parts.push(part);
    size += part.length + 1;
  }
  return parts.join('\n').slice(0, bytes);
}
function base64Blob(bytes: number): string {
  let x = 20261202;
  const raw = Buffer.alloc(Math.ceil((bytes * 3) / 4));
  for (let i = 0; i < raw.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    raw[i] = x >>> 24;
  }
  return 'data:image/png;base64,' + raw.toString('base64').slice(0, bytes);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
/** MB/s of `fn` over `text` (split in 64 KiB writes, the size of a large memory record), median of the rounds. */
function throughput(text: string, fn: (chunk: string) => unknown): number {
  const chunks: string[] = [];
  for (let i = 0; i < text.length; i += 65536) chunks.push(text.slice(i, i + 65536));
  const rates: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = performance.now();
    for (const c of chunks) fn(c);
    rates.push(text.length / 1e6 / ((performance.now() - t0) / 1000));
  }
  return Math.round(median(rates) * 10) / 10;
}

const mixed = mixedText(MB * 1e6);
const blob = base64Blob(MB * 1e6);

// ---- the server filter -------------------------------------------------------------------------------------------
const serverVerdicts = cases.map((c) => ({
  ids: SERVER_DETECTORS.filter((d) => scan(c.value, [d]).length > 0).map((d) => d.sdkId),
  flagged: scan(c.value).length > 0,
}));
const server = {
  table: 'subgraphs/memory/src/secrets (server filter, REJECT)',
  ...score(serverVerdicts),
  mbPerSecMixed: throughput(mixed, (t) => scan(t)),
  mbPerSecBase64: throughput(blob, (t) => scan(t)),
};

// ---- the TypeScript SDK -------------------------------------------------------------------------------------------
const sdkVerdicts = cases.map((c) => {
  const ids = detect(c.value).map((d) => d.id);
  return { ids, flagged: ids.length > 0 };
});
const typescript = {
  table: "sdk-templates/typescript (the TypeScript SDK runtime's privacy gate detectors)",
  ...score(sdkVerdicts),
  mbPerSecMixed: throughput(mixed, (t) => detect(t)),
  mbPerSecBase64: throughput(blob, (t) => detect(t)),
};

// ---- the Python SDK (same corpus, same texts, its own clock) -------------------------------------------------------
const PY = String.raw`
import json, sys, time, statistics
sys.path.insert(0, sys.argv[1])
from agentgraph_runtime.detectors import detect
data = json.loads(sys.stdin.read())
ids = [[d.id for d in detect(v)] for v in data["values"]]
def rate(text):
    chunks = [text[i:i + 65536] for i in range(0, len(text), 65536)]
    rates = []
    for _ in range(data["rounds"]):
        t0 = time.perf_counter()
        for c in chunks:
            detect(c)
        rates.append(len(text) / 1e6 / (time.perf_counter() - t0))
    return round(statistics.median(rates), 1)
print(json.dumps({"ids": ids, "mixed": rate(data["mixed"]), "base64": rate(data["blob"])}))
`;
let python: unknown;
try {
  const out = execFileSync('/usr/bin/python3', ['-c', PY, join(REPO_ROOT, 'sdk-templates/python')], {
    input: JSON.stringify({ values: cases.map((c) => c.value), rounds: ROUNDS, mixed, blob }),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const py = JSON.parse(out) as { ids: string[][]; mixed: number; base64: number };
  python = {
    table: "sdk-templates/python (the Python SDK runtime's privacy gate detectors)",
    ...score(py.ids.map((ids) => ({ ids, flagged: ids.length > 0 }))),
    sameIdsAsTypeScript: py.ids.every((ids, i) => ids.join() === sdkVerdicts[i]!.ids.join()),
    mbPerSecMixed: py.mixed,
    mbPerSecBase64: py.base64,
  };
} catch (err) {
  python = { error: `python run failed: ${(err as Error).message.split('\n')[0]}` };
}

const disagreements = cases.flatMap((c, i) =>
  serverVerdicts[i]!.flagged === sdkVerdicts[i]!.flagged
    ? []
    : [{ id: c.id, server: serverVerdicts[i]!.flagged, sdk: sdkVerdicts[i]!.flagged }],
);

console.log(
  JSON.stringify(
    {
      corpus: {
        file: 'test/secrets-corpus/corpus.json',
        cases: cases.length,
        secrets: cases.filter((c) => c.label === 'secret').length,
        harmless: cases.filter((c) => c.label === 'harmless').length,
      },
      targets: { recall: 0.97, precision: 0.95 },
      scanned: { mixedMB: MB, base64MB: MB, rounds: ROUNDS, chunkBytes: 65536 },
      tables: { server, typescript, python },
      serverVsSdkDisagreements: disagreements,
    },
    null,
    2,
  ),
);
