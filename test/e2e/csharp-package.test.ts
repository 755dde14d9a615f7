/**
 * The C# SDK as a third party installs it: both packages (AgentGraph.Sdk.Runtime and the generated AgentGraph.Sdk)
 * are packed into a local folder feed; a new console app (`dotnet new console`, outside the repository) whose
 * nuget.config lists that folder and this machine's NuGet source runs `dotnet add package AgentGraph.Sdk`, restores
 * (AgentGraph.* only from the folder, by package source mapping; an empty global packages folder of its own, so no
 * cached copy of an older pack is used), builds, and runs test/e2e/fixtures/PackageConsumer/Program.cs against a
 * GraphQL server on loopback (node:http): a query, a keyed mutation whose first attempt gets 503 (resent with the
 * same Idempotency-Key) and a list paged over two pages. No platform, no database.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDotnetProject, DOTNET_ENV } from '../src/dotnet-build.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SDK = join(ROOT, 'sdks/csharp/src/AgentGraph.Sdk/AgentGraph.Sdk.csproj');
const RUNTIME = join(ROOT, 'sdk-templates/csharp/src/AgentGraph.Sdk.Runtime/AgentGraph.Sdk.Runtime.csproj');
const PROGRAM = join(ROOT, 'test/e2e/fixtures/PackageConsumer/Program.cs');
const VERSION = /<Version>([^<]+)<\/Version>/.exec(
  readFileSync(join(ROOT, 'sdk-templates/csharp/Directory.Build.props'), 'utf8'),
)![1]!;

interface Seen {
  operationName: string;
  variables: Record<string, unknown>;
  headers: IncomingMessage['headers'];
}

let tmp: string;
let server: Server;
let baseUrl: string;
const seen: Seen[] = [];
const timings: Record<string, number> = {};

async function timed<T>(phase: string, work: () => Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await work();
  } finally {
    timings[phase] = Math.round(performance.now() - start);
  }
}

async function dotnet(args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await run('dotnet', args, { cwd, env: DOTNET_ENV, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`dotnet ${args.join(' ')} failed in ${cwd}:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
}

/** The enabled NuGet sources of this machine (`dotnet nuget list source`), e.g. nuget.org or a mirror. */
async function machineSources(): Promise<string[]> {
  const out = await dotnet(['nuget', 'list', 'source', '--format', 'short'], tmp);
  const sources = out
    .split('\n')
    .map((line) => /^\s*E\S*\s+(\S+)/.exec(line)?.[1])
    .filter((s): s is string => s !== undefined);
  if (sources.length === 0) throw new Error(`no enabled NuGet source in:\n${out}`);
  return sources;
}

async function globalPackages(): Promise<string> {
  const out = await dotnet(['nuget', 'locals', 'global-packages', '--list'], tmp);
  return /global-packages:\s*(\S.*)$/m.exec(out)![1]!.trim();
}

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

function nugetConfig(feed: string, sources: string[], fallback: string, packages: string): string {
  const remote = sources.map((url, i) => `    <add key="remote${i}" value="${xml(url)}" />`).join('\n');
  const mapped = sources
    .map((_, i) => `    <packageSource key="remote${i}"><package pattern="*" /></packageSource>`)
    .join('\n');
  return `<?xml version="1.0" encoding="utf-8"?>
<configuration>
  <config>
    <add key="globalPackagesFolder" value="${xml(packages)}" />
  </config>
  <packageSources>
    <clear />
    <add key="local" value="${xml(feed)}" />
${remote}
  </packageSources>
  <fallbackPackageFolders>
    <clear />
    <add key="machine" value="${xml(fallback)}" />
  </fallbackPackageFolders>
  <packageSourceMapping>
    <packageSource key="local"><package pattern="AgentGraph.*" /></packageSource>
${mapped}
  </packageSourceMapping>
</configuration>
`;
}

const ROOMS = [
  { id: 'r1', name: 'alpha', createdAt: '2026-12-01T00:00:00.000Z' },
  { id: 'r2', name: 'beta', createdAt: '2026-12-01T00:00:01.000Z' },
  { id: 'r3', name: 'gamma', createdAt: '2026-12-01T00:00:02.000Z' },
];

/** A GraphQL endpoint that answers the three operations the consumer sends, by operationName. */
function answer(body: Seen): { status: number; headers?: Record<string, string>; json: unknown } {
  switch (body.operationName) {
    case 'Viewer':
      return {
        status: 200,
        json: {
          data: {
            viewer: {
              role: 'OWNER',
              user: { id: 'u1', email: 'ada@example.com', displayName: 'Ada' },
              tenant: { id: 't1', name: 'Acme' },
            },
          },
        },
      };
    case 'CreateRoom': {
      const attempt = seen.filter((s) => s.operationName === 'CreateRoom').length;
      if (attempt === 1)
        return {
          status: 503,
          headers: { 'retry-after': '0' },
          json: { errors: [{ message: 'busy', extensions: { code: 'SERVICE_UNAVAILABLE' } }] },
        };
      return {
        status: 200,
        json: {
          data: { createRoom: { room: { id: 'room-9', name: 'ops', createdAt: ROOMS[0]!.createdAt } } },
        },
      };
    }
    case 'Rooms': {
      const start = body.variables.after === 'c2' ? 2 : 0;
      const page = ROOMS.slice(start, start + 2);
      return {
        status: 200,
        json: {
          data: {
            rooms: {
              edges: page.map((node, i) => ({ cursor: `c${start + i + 1}`, node })),
              pageInfo: { hasNextPage: start + 2 < ROOMS.length, endCursor: `c${start + page.length}` },
            },
          },
        },
      };
    }
    default:
      return { status: 400, json: { errors: [{ message: `unexpected operation ${body.operationName}` }] } };
  }
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'agentgraph-csharp-package-'));
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Omit<Seen, 'headers'>;
      const body: Seen = { ...parsed, headers: req.headers };
      seen.push(body);
      const { status, headers, json } = answer(body);
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
}, 30_000);

afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  console.log(JSON.stringify({ test: 'csharp-package', ms: timings }));
});

describe('C# SDK: installed from its NuGet packages into a new console app', () => {
  it('packs both packages, adds AgentGraph.Sdk to a new app, restores and runs it against a loopback server', async () => {
    const feed = join(tmp, 'feed');
    await timed('build', () => buildDotnetProject(SDK));
    await timed('pack', async () => {
      for (const project of [RUNTIME, SDK])
        await dotnet(['pack', project, '--no-build', '-c', 'Release', '-o', feed, '--nologo'], tmp);
    });
    expect(readdirSync(feed).sort()).toEqual([
      `AgentGraph.Sdk.${VERSION}.nupkg`,
      `AgentGraph.Sdk.${VERSION}.snupkg`,
      `AgentGraph.Sdk.Runtime.${VERSION}.nupkg`,
      `AgentGraph.Sdk.Runtime.${VERSION}.snupkg`,
    ]);

    const app = join(tmp, 'PackageConsumer');
    writeFileSync(
      join(tmp, 'nuget.config'),
      nugetConfig(feed, await machineSources(), await globalPackages(), join(tmp, 'packages')),
    );
    await timed('new', () =>
      dotnet(['new', 'console', '-n', 'PackageConsumer', '-o', app, '--no-restore'], tmp),
    );
    await timed('add package', () => dotnet(['add', 'package', 'AgentGraph.Sdk', '--version', VERSION], app));
    const project = readFileSync(join(app, 'PackageConsumer.csproj'), 'utf8');
    expect(project).toContain(`<PackageReference Include="AgentGraph.Sdk" Version="${VERSION}" />`);
    expect(readdirSync(join(tmp, 'packages')).sort()).toEqual(
      expect.arrayContaining(['agentgraph.sdk', 'agentgraph.sdk.runtime']),
    );
    // What NuGet extracted (the package as a consumer gets it): metadata, the README, the dependency on the runtime.
    for (const id of ['AgentGraph.Sdk', 'AgentGraph.Sdk.Runtime']) {
      const dir = join(tmp, 'packages', id.toLowerCase(), VERSION);
      const nuspec = readFileSync(join(dir, `${id.toLowerCase()}.nuspec`), 'utf8');
      expect(nuspec, id).toContain('<license type="expression">Apache-2.0</license>');
      expect(nuspec, id).toContain('<readme>README.md</readme>');
      expect(nuspec, id).toMatch(/<repository type="git" url="https:\/\/[^"]+"/);
      expect(nuspec, id).toMatch(/<tags>[^<]*agentgraph[^<]*<\/tags>/);
      expect(readFileSync(join(dir, 'README.md'), 'utf8'), id).toMatch(/^# AgentGraph/);
      expect(readdirSync(join(dir, 'lib')).sort(), id).toEqual(['net10.0', 'net8.0']);
    }
    const sdkNuspec = readFileSync(
      join(tmp, 'packages/agentgraph.sdk', VERSION, 'agentgraph.sdk.nuspec'),
      'utf8',
    );
    for (const tfm of ['net8.0', 'net10.0'])
      expect(sdkNuspec).toMatch(
        new RegExp(
          `<group targetFramework="${tfm.replace('.', '\\.')}">\\s*<dependency id="AgentGraph.Sdk.Runtime" version="${VERSION.replace(/\./g, '\\.')}"`,
        ),
      );
    copyFileSync(PROGRAM, join(app, 'Program.cs'));
    await timed('build app', () =>
      dotnet(['build', '-c', 'Release', '--nologo', '-v', 'q', '-m:1', '--disable-build-servers'], app),
    );
    const stdout = await timed('run', () =>
      dotnet([join(app, 'bin/Release/net10.0/PackageConsumer.dll'), baseUrl], app),
    );

    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([
      { call: 'viewer', role: 'OWNER', email: 'ada@example.com' },
      { call: 'createRoom', id: 'room-9', attempts: 2, key: 'consumer-key-1' },
      { call: 'rooms', names: ['alpha', 'beta', 'gamma'] },
    ]);
    const creates = seen.filter((s) => s.operationName === 'CreateRoom');
    expect(creates.map((s) => [s.headers['idempotency-key'], s.variables.idempotencyKey])).toEqual([
      ['consumer-key-1', 'consumer-key-1'],
      ['consumer-key-1', 'consumer-key-1'],
    ]);
    expect(seen.filter((s) => s.operationName === 'Rooms').map((s) => s.variables)).toEqual([
      { first: 2 },
      { first: 2, after: 'c2' },
    ]);
    expect(new Set(seen.map((s) => s.headers.authorization))).toEqual(new Set(['Bearer consumer-token']));
  }, 600_000);
});
