#!/usr/bin/env node
// `npm test`: the whole suite, every language, one summary. Each test runs once per database it needs. The parts:
//  1. the fast tier, alone with `npm run test:unit` (--unit), a minute or less: vitest on the files that need no
//     database, browser or platform (UNIT in vitest.config.ts, AGENTGRAPH_TEST_SCOPE=unit), and the Python SDK's
//     pytest suite with Debian's /usr/bin/python3 (once sdks/python exists). TEST_UNIT=0 leaves it out (CI runs it
//     first, on its own);
//  2. vitest on the embedded PGlite database for the rest (AGENTGRAPH_TEST_SCOPE=integration), or on DATABASE_URL
//     when the caller set one (then step 3 is left out);
//  3. vitest again on a private PostgreSQL 15 cluster (scripts/pg-cluster.sh) for the files that touch a database
//     (AGENTGRAPH_TEST_SCOPE=database; vitest.config.ts lists the ones that do not), when PostgreSQL 15's binaries
//     are installed (TEST_POSTGRES=0 leaves it out; TEST_POSTGRES=1 makes a missing server a failure);
//  4. the C# SDK's xunit tests (runtime + conformance vectors, and the generated SDK's), with `dotnet test`.
// Each part's counts come from its machine-readable report (vitest JSON, TRX, JUnit XML). The last line is
// `N passed, N failed` (all parts added up); the exit code is non-zero when anything failed or could not run.
// `npm test -- <vitest args>` runs only vitest with those arguments (one file, a filter, --watch...);
// `npm run test:unit -- <vitest args>` the same within the fast tier.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, '.test-results');
const unitOnly = process.argv[2] === '--unit';
const args = process.argv.slice(unitOnly ? 3 : 2);
const vitestBin = join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');

if (args.length > 0) {
  const env = unitOnly ? { ...process.env, AGENTGRAPH_TEST_SCOPE: 'unit' } : process.env;
  const r = spawnSync(process.execPath, [vitestBin, 'run', ...args], { cwd: ROOT, env, stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const parts = [];
const say = (m) => console.log(`\ntest-all: ${m}`);
const has = (cmd) => spawnSync('bash', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

function run(cmd, argv, opts = {}) {
  const started = Date.now();
  const r = spawnSync(cmd, argv, { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, stdio: 'inherit' });
  return { status: r.status ?? 1, seconds: Math.round((Date.now() - started) / 1000) };
}

/** vitest's JSON report; a file that failed to load, or a non-zero exit with no failure listed, counts as one. */
function countVitest(file, status) {
  try {
    const report = JSON.parse(readFileSync(file, 'utf8'));
    let failed = report.numFailedTests ?? 0;
    for (const suite of report.testResults ?? []) {
      const failedInFile = (suite.assertionResults ?? []).filter((t) => t.status === 'failed').length;
      if (suite.status === 'failed' && failedInFile === 0) failed += 1;
    }
    if (status !== 0 && failed === 0) failed = 1;
    return { passed: report.numPassedTests ?? 0, failed };
  } catch {
    return { passed: 0, failed: 1 };
  }
}

/** Counters of TRX files (xunit through `dotnet test --logger trx`). */
function countTrx(files, status) {
  let passed = 0;
  let failed = 0;
  for (const f of files) {
    const m = /<Counters[^>]*\btotal="(\d+)"[^>]*\bpassed="(\d+)"[^>]*\bfailed="(\d+)"/.exec(
      readFileSync(f, 'utf8'),
    );
    if (m) {
      passed += Number(m[2]);
      failed += Number(m[3]);
    } else failed += 1;
  }
  if (files.length === 0 || (status !== 0 && failed === 0)) failed += 1;
  return { passed, failed };
}

/** A JUnit XML report (pytest --junitxml). */
function countJunit(file, status) {
  try {
    const xml = readFileSync(file, 'utf8');
    let tests = 0;
    let bad = 0;
    let skipped = 0;
    for (const m of xml.matchAll(/<testsuite\b([^>]*)>/g)) {
      const attr = (n) => Number(new RegExp(`\\b${n}="(\\d+)"`).exec(m[1])?.[1] ?? 0);
      tests += attr('tests');
      bad += attr('failures') + attr('errors');
      skipped += attr('skipped');
    }
    const failed = bad || (status !== 0 ? 1 : 0);
    return { passed: tests - bad - skipped, failed };
  } catch {
    return { passed: 0, failed: 1 };
  }
}

function vitest(label, env) {
  const report = join(OUT, `vitest-${label}.json`);
  say(`vitest on ${label}`);
  const r = run(
    process.execPath,
    [vitestBin, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`],
    { env },
  );
  parts.push({ part: `vitest (${label})`, seconds: r.seconds, ...countVitest(report, r.status) });
}

const callerDb = process.env.DATABASE_URL;
const baseEnv = { ...process.env };
delete baseEnv.DATABASE_URL;

// 1: the fast tier: TypeScript that needs no database, and Python (Debian's interpreter and apt packages:
// python3-httpx, python3-tenacity, python3-jwt, python3-cryptography, python3-pytest; the packaging test also
// builds wheels and a venv: python3-build, python3-setuptools, python3-wheel, python3-venv).
if (unitOnly || process.env.TEST_UNIT !== '0') {
  vitest('unit', { ...baseEnv, AGENTGRAPH_TEST_SCOPE: 'unit' });
  const PY_DIRS = ['sdk-templates/python/tests', 'sdks/python/tests'].filter((d) =>
    existsSync(join(ROOT, d)),
  );
  if (PY_DIRS.length > 0) {
    const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
    const xml = join(OUT, 'pytest.xml');
    say(`${python} -m pytest ${PY_DIRS.join(' ')}`);
    const r = run(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', `--junitxml=${xml}`, ...PY_DIRS]);
    parts.push({ part: 'pytest (Python)', seconds: r.seconds, ...countJunit(xml, r.status) });
  }
} else {
  say('TEST_UNIT=0: the fast tier is left out (it ran on its own: npm run test:unit)');
}
if (unitOnly) finish();

// The console's browser tests serve the built app (npm start builds it too, but once here, not per test file).
say('building the web console');
if (run(process.execPath, [join(ROOT, 'scripts/build-web.mjs')]).status !== 0) {
  parts.push({ part: 'web console build', seconds: 0, passed: 0, failed: 1 });
}

// 2 + 3: the rest of the TypeScript on PGlite (or the caller's DATABASE_URL), then on a private PostgreSQL cluster.
const rest = { AGENTGRAPH_TEST_SCOPE: 'integration' };
vitest(
  callerDb ? 'DATABASE_URL' : 'PGlite',
  callerDb ? { ...process.env, ...rest } : { ...baseEnv, ...rest },
);
const pgWanted = process.env.TEST_POSTGRES !== '0' && !callerDb;
const pgInstalled = existsSync('/usr/lib/postgresql/15/bin/initdb') || Boolean(process.env.PG_BIN);
if (pgWanted && pgInstalled) {
  const started = spawnSync('bash', [join(ROOT, 'scripts/pg-cluster.sh'), 'start'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = /DATABASE_URL=(\S+)/.exec(started.stdout ?? '')?.[1];
  const dir = /PG_CLUSTER_DIR=(\S+)/.exec(started.stdout ?? '')?.[1];
  if (started.status === 0 && url) {
    try {
      vitest('PostgreSQL', { ...baseEnv, DATABASE_URL: url, AGENTGRAPH_TEST_SCOPE: 'database' });
    } finally {
      spawnSync('bash', [join(ROOT, 'scripts/pg-cluster.sh'), 'stop', dir ?? ''], {
        cwd: ROOT,
        stdio: 'inherit',
      });
    }
  } else {
    parts.push({
      part: 'vitest (PostgreSQL)',
      seconds: 0,
      passed: 0,
      failed: 1,
      note: 'the cluster did not start',
    });
  }
} else if (pgWanted) {
  const required = process.env.TEST_POSTGRES === '1';
  say(
    `PostgreSQL 15 is not installed: the PostgreSQL pass is ${required ? 'missing (failure)' : 'left out'}`,
  );
  if (required)
    parts.push({ part: 'vitest (PostgreSQL)', seconds: 0, passed: 0, failed: 1, note: 'not installed' });
}

// 4: C#.
// Every test project of the hand-written runtime (sdk-templates/csharp/test/*), and the generated SDK's solution.
const templateTests = join(ROOT, 'sdk-templates/csharp/test');
const CSHARP_SUITES = [
  ...(existsSync(templateTests) ? readdirSync(templateTests).sort() : []).map((d) => [
    `sdk-templates/csharp/test/${d}`,
    d,
  ]),
  ['sdks/csharp', 'generated-sdk'],
];
if (has('dotnet')) {
  const env = {
    ...process.env,
    DOTNET_CLI_TELEMETRY_OPTOUT: '1',
    DOTNET_NOLOGO: '1',
    DOTNET_SKIP_FIRST_TIME_EXPERIENCE: '1',
  };
  for (const [dir, name] of CSHARP_SUITES) {
    if (!existsSync(join(ROOT, dir))) continue;
    say(`dotnet test ${dir}`);
    const results = join(OUT, name);
    const r = run(
      'dotnet',
      [
        'test',
        '-m:1',
        '--disable-build-servers',
        '--logger',
        `trx;LogFileName=${name}.trx`,
        '--results-directory',
        results,
      ],
      { cwd: join(ROOT, dir), env },
    );
    const trx = existsSync(results)
      ? readdirSync(results)
          .filter((f) => f.endsWith('.trx'))
          .map((f) => join(results, f))
      : [];
    parts.push({ part: `xunit (${name})`, seconds: r.seconds, ...countTrx(trx, r.status) });
  }
} else {
  say('dotnet is not on PATH: the C# suites could not run (failure)');
  parts.push({ part: 'xunit (C#)', seconds: 0, passed: 0, failed: 1, note: 'dotnet missing' });
}

finish();

/** Prints each part's counts and the last line, `N passed, N failed`, and exits (non-zero if anything failed). */
function finish() {
  console.log('\ntest-all: summary');
  for (const p of parts) {
    console.log(
      `  ${p.part.padEnd(24)} ${String(p.passed).padStart(5)} passed ${String(p.failed).padStart(3)} failed  ${String(p.seconds).padStart(4)} s${p.note ? `  (${p.note})` : ''}`,
    );
  }
  const passed = parts.reduce((n, p) => n + p.passed, 0);
  const failed = parts.reduce((n, p) => n + p.failed, 0);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}
