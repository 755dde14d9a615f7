/**
 * The web console's end-to-end bed: the real `npm start` (a child process: gateway, subgraphs, the built console)
 * on free loopback ports with an embedded PGlite database in a temporary folder, seeded beforehand with the admin
 * CLI the way an operator would (`npm run admin -- bootstrap / create-user / add-member`), and Debian's Chromium
 * driven by playwright-core. Helpers: sign in through identity's real pages, run axe-core on a page, save a
 * screenshot under test-results/console/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { AgentGraph, AgentGraphError } from '../../../sdks/typescript/src/index.js';
import { expect } from 'vitest';
import { freePort } from '../../src/ports.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const ARTIFACTS = join(ROOT, 'test-results/console');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface ConsoleUser {
  email: string;
  password: string;
  displayName: string;
  userId: string;
}

export interface ConsoleBed {
  /** The console and API origin, e.g. http://127.0.0.1:41234 (GraphQL at /graphql). */
  url: string;
  /** Identity's origin (sign-in pages, OAuth endpoints, /dev/token). */
  identityUrl: string;
  tenantId: string;
  /** OWNER of tenant "Acme". */
  owner: ConsoleUser;
  /** PUBLISHER in "Acme": uploads plugin packages. */
  uploader: ConsoleUser;
  browser: Browser;
  /** A fresh browser profile (no cookies) with a page. */
  newPage(): Promise<{ context: BrowserContext; page: Page }>;
  /** An access token for calls from the test itself (development mode's /dev/token; loopback only). */
  tokenFor(user: ConsoleUser): Promise<string>;
  /** The TypeScript SDK as another client of the API, with a token of `user` (PERSONAL data allowed). */
  sdkFor(user: ConsoleUser): Promise<AgentGraph>;
  /** `npm start`'s output so far (for failure messages). */
  output(): string;
  close(): Promise<void>;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, stdin?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${err}\n${out}`)),
    );
    child.stdin.end(stdin ?? '');
  });
}

function lastJson<T>(stdout: string): T {
  const line = stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  if (!line) throw new Error(`no JSON line in: ${stdout}`);
  return JSON.parse(line) as T;
}

async function waitReady(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}:\n${output()}`);
    try {
      const res = await fetch(`${url}/readyz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`npm start was not ready within 90 s:\n${output()}`);
}

export async function startConsoleBed(): Promise<ConsoleBed> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agentgraph-console-'));
  const [gatewayPort, identityPort, memoryPort, coordinationPort, catalogPort] = await Promise.all(
    Array.from({ length: 5 }, () => freePort()),
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AGENTGRAPH_MODE: 'development',
    DATA_DIR: dataDir,
    CATALOG_STORAGE_DIR: join(dataDir, 'packages'),
    HOST: '127.0.0.1',
    GATEWAY_PORT: String(gatewayPort),
    IDENTITY_PORT: String(identityPort),
    MEMORY_PORT: String(memoryPort),
    COORDINATION_PORT: String(coordinationPort),
    CATALOG_PORT: String(catalogPort),
    LOG_LEVEL: 'warn',
  };
  delete env['DATABASE_URL'];
  delete env['OAUTH_CONSOLE_REDIRECT_URIS'];
  const tsx = join(ROOT, 'node_modules/.bin/tsx');
  const cli = join(ROOT, 'subgraphs/identity/src/cli.ts');

  // Seeded as an operator would, before the server holds the embedded database.
  const owner = {
    email: 'ada@acme.test',
    password: 'correct horse battery staple',
    displayName: 'Ada Owner',
  };
  const uploader = {
    email: 'uma@acme.test',
    password: 'uploader pass phrase 42',
    displayName: 'Uma Uploader',
  };
  const boot = lastJson<{ tenantId: string; userId: string }>(
    await run(
      tsx,
      [
        cli,
        'bootstrap',
        '--tenant',
        'Acme',
        '--email',
        owner.email,
        '--name',
        owner.displayName,
        '--password-stdin',
      ],
      env,
      `${owner.password}\n`,
    ),
  );
  const created = lastJson<{ userId: string }>(
    await run(
      tsx,
      [cli, 'create-user', '--email', uploader.email, '--name', uploader.displayName, '--password-stdin'],
      env,
      `${uploader.password}\n`,
    ),
  );
  await run(
    tsx,
    [cli, 'add-member', '--tenant-id', boot.tenantId, '--email', uploader.email, '--role', 'PUBLISHER'],
    env,
  );

  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const url = `http://127.0.0.1:${gatewayPort}`;
  const identityUrl = `http://127.0.0.1:${identityPort}`;
  const stopServer = async () => {
    if (child.exitCode !== null || child.pid === undefined) return;
    const exited = new Promise((r) => child.once('exit', r));
    process.kill(-child.pid, 'SIGTERM');
    const timer = setTimeout(() => child.pid && process.kill(-child.pid, 'SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  let browser: Browser | undefined;
  try {
    await waitReady(url, child, () => log);
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  } catch (err) {
    await stopServer();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  const b = browser;
  const tokenFor = async (user: ConsoleUser): Promise<string> => {
    const res = await fetch(`${identityUrl}/dev/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: user.email }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { access_token: string }).access_token;
  };
  return {
    url,
    identityUrl,
    tenantId: boot.tenantId,
    owner: { ...owner, userId: boot.userId },
    uploader: { ...uploader, userId: created.userId },
    browser: b,
    async newPage() {
      const context = await b.newContext({ viewport: { width: 1280, height: 900 } });
      return { context, page: await context.newPage() };
    },
    tokenFor,
    async sdkFor(user) {
      const token = await tokenFor(user);
      return new AgentGraph({
        baseUrl: `${url}/graphql`,
        tokenProvider: { getToken: async () => token, refresh: async () => token },
        privacyPolicy: { allow: ['PUBLIC', 'INTERNAL', 'PERSONAL'] },
      });
    },
    output: () => log,
    async close() {
      await b.close().catch(() => undefined);
      await stopServer();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The code of the AgentGraphError a call fails with ('no error' when it succeeds). */
export async function errorCodeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return 'no error';
  } catch (err) {
    return err instanceof AgentGraphError ? err.code : String(err);
  }
}

/** Signs in through the console's button and identity's real sign-in page; resolves on the console's overview. */
export async function signIn(page: Page, bed: ConsoleBed, user: ConsoleUser, path = '/'): Promise<void> {
  await page.goto(`${bed.url}${path}`);
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.origin === bed.identityUrl);
  await page.getByLabel('E-mail address').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.origin === bed.url && !u.pathname.startsWith('/auth/'));
  await expect
    .poll(() => page.getByRole('button', { name: 'Sign out' }).count(), { timeout: 15_000 })
    .toBe(1);
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** axe-core on the page as it is now; the serious and critical violations (the issue allows none). */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as { axe: { run: (ctx: Document) => Promise<{ violations: AxeViolation[] }> } }
    ).axe;
    const result = await axe.run(document);
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target })),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Fails with the violations listed when the page has a serious or critical one. */
export async function expectAccessible(page: Page): Promise<void> {
  expect(await axeViolations(page)).toEqual([]);
}

/** A full-page screenshot kept as a test artefact: test-results/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
