/**
 * The web console's initial load: `npx tsx bench/src/console-bench.ts [--runs 10]` prints JSON.
 *
 * The whole platform in this process (startPlatform with the built console, PGlite in memory, development mode) on
 * loopback, and Debian's Chromium (playwright-core). For each run a fresh browser context (empty cache):
 * - bytes: what crossed the wire for the load (CDP `Network.loadingFinished` encodedDataLength: headers + bodies as
 *   sent, compressed), split into the app's files and API calls;
 * - time to interactive: from navigation start until the first control a person uses is rendered (the "Sign in"
 *   link signed out; the "Sign out" button and the overview's data signed in) and no long task (> 50 ms on the main
 *   thread) is still running: max(control rendered, end of the last long task before it, DOMContentLoaded);
 * signed out (cold), signed in (cold cache, refresh cookie present: includes /auth/refresh and the viewer query),
 * and signed in with a warm cache. Also the built files' sizes (raw, gzip, brotli).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { createLogger, loadConfig } from '@agentgraph/runtime';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startPlatform } from '../../gateway/src/platform.js';
import { freePort } from '../../test/src/ports.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '10' }, 'no-build': { type: 'boolean', default: false } },
});
const RUNS = Math.max(1, Number(values.runs));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = join(ROOT, 'web/dist');

// Build when the sources changed (--no-build: measure web/dist as it is).
if (!values['no-build'])
  execFileSync(process.execPath, [join(ROOT, 'scripts/build-web.mjs')], { stdio: 'inherit' });

function builtSizes() {
  const out: Record<string, { raw: number; gzip: number; brotli: number }> = {};
  const files = ['index.html', ...readdirSync(join(DIST, 'assets')).map((f) => `assets/${f}`)];
  for (const f of files) {
    const body = readFileSync(join(DIST, f));
    out[f] = {
      raw: body.length,
      gzip: gzipSync(body, { level: 9 }).length,
      brotli: brotliCompressSync(body).length,
    };
  }
  return out;
}

const port = await freePort();
Object.assign(process.env, {
  AGENTGRAPH_MODE: 'development',
  DATA_DIR: 'memory://',
  HOST: '127.0.0.1',
  GATEWAY_PORT: String(port),
  IDENTITY_PORT: '0',
  MEMORY_PORT: '0',
  COORDINATION_PORT: '0',
  CATALOG_PORT: '0',
  LOG_LEVEL: 'error',
});
delete process.env['DATABASE_URL'];
delete process.env['OAUTH_CONSOLE_REDIRECT_URIS'];
const config = loadConfig();
const platform = await startPlatform(config, {
  log: createLogger({ service: 'bench' }, { level: 'error' }),
  console: { distDir: DIST },
});
const base = platform.gatewayUrl;
const creds = JSON.parse(readFileSync(platform.devTenant!.credentialsFile!, 'utf8')) as {
  email: string;
  password: string;
};
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});

/** Installed before any page script: records long tasks and when the target control first appears. */
const PROBE = `(() => {
  window.__bench = { longTaskEnds: [], readyAt: null };
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__bench.longTaskEnds.push(e.startTime + e.duration);
    }).observe({ type: 'longtask', buffered: true });
  } catch {}
  const check = () => {
    if (window.__bench.readyAt !== null) return;
    const target = window.__benchTarget;
    const el = target && document.querySelector(target);
    if (el) window.__bench.readyAt = performance.now();
  };
  new MutationObserver(check).observe(document, { childList: true, subtree: true, characterData: true });
})();`;

interface LoadResult {
  ms: number;
  bytes: number;
  appBytes: number;
  apiBytes: number;
  requests: number;
}

async function measure(context: BrowserContext, path: string, target: string): Promise<LoadResult> {
  const page: Page = await context.newPage();
  await page.addInitScript(`window.__benchTarget = ${JSON.stringify(target)};`);
  await page.addInitScript(PROBE);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  const urls = new Map<string, string>();
  let bytes = 0;
  let apiBytes = 0;
  let requests = 0;
  cdp.on('Network.requestWillBeSent', (e: { requestId: string; request: { url: string } }) =>
    urls.set(e.requestId, e.request.url),
  );
  cdp.on('Network.loadingFinished', (e: { requestId: string; encodedDataLength: number }) => {
    requests++;
    bytes += e.encodedDataLength;
    const url = urls.get(e.requestId) ?? '';
    if (url.includes('/graphql') || url.includes('/auth/')) apiBytes += e.encodedDataLength;
  });
  await page.goto(`${base}${path}`);
  await page.waitForFunction(
    () => (window as unknown as { __bench: { readyAt: number | null } }).__bench.readyAt !== null,
  );
  // Long tasks are reported after they end: give the observer a moment past the ready mark.
  await page.waitForTimeout(300);
  const t = await page.evaluate(() => {
    const b = (window as unknown as { __bench: { readyAt: number; longTaskEnds: number[] } }).__bench;
    const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
    const before = b.longTaskEnds.filter((end) => end <= b.readyAt + 50);
    return Math.max(b.readyAt, nav.domContentLoadedEventEnd, ...before);
  });
  await page.close();
  return { ms: Math.round(t * 10) / 10, bytes, appBytes: bytes - apiBytes, apiBytes, requests };
}

function summary(results: LoadResult[]) {
  const pick = (k: keyof LoadResult) => results.map((r) => r[k]).sort((a, b) => a - b);
  const q = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
  const ms = pick('ms');
  return {
    runs: results.length,
    ttiMedianMs: q(ms, 0.5),
    ttiP90Ms: q(ms, 0.9),
    transferBytesMedian: q(pick('bytes'), 0.5),
    appBytesMedian: q(pick('appBytes'), 0.5),
    apiBytesMedian: q(pick('apiBytes'), 0.5),
    requestsMedian: q(pick('requests'), 0.5),
  };
}

async function signedInCookies(): Promise<Awaited<ReturnType<BrowserContext['cookies']>>> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(base);
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.getByLabel('E-mail address').fill(creds.email);
  await page.getByLabel('Password').fill(creds.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  const cookies = await context.cookies();
  await context.close();
  return cookies;
}

try {
  const signedOut: LoadResult[] = [];
  const signedInCold: LoadResult[] = [];
  const signedInWarm: LoadResult[] = [];
  const signedInTarget = 'dl.facts dd:nth-of-type(4):not(:empty)';
  for (let i = 0; i < RUNS; i++) {
    const cold = await browser.newContext();
    signedOut.push(await measure(cold, '/', 'a[href^="/auth/signin"]'));
    await cold.close();

    // Each signed-in run starts from its own session (refresh tokens rotate: a cookie is good for one use).
    const cookies = await signedInCookies();
    const ctx = await browser.newContext();
    await ctx.addCookies(cookies);
    signedInCold.push(await measure(ctx, '/', signedInTarget));
    signedInWarm.push(await measure(ctx, '/', signedInTarget));
    await ctx.close();
  }
  console.log(
    JSON.stringify(
      {
        files: builtSizes(),
        signedOutCold: summary(signedOut),
        signedInCold: summary(signedInCold),
        signedInWarm: summary(signedInWarm),
        note: 'loopback, headless Chromium, no CPU or network throttling; TTI = max(control rendered, last long task end, DOMContentLoaded)',
      },
      null,
      2,
    ),
  );
} finally {
  await browser.close();
  await platform.close();
}
