/**
 * The Python target: no copy of the runtime (the generated package depends on agentgraph-runtime at the runtime's
 * own version), snake_case names with the wire names kept, typed paginators, both clients, and a README that
 * quotes every sample whole. The generated Python itself runs in sdks/python/tests and
 * sdk-templates/python/tests/test_packaging.py (pytest).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildIR } from '../src/sdk/build-ir.js';
import type { GeneratedFile } from '../src/sdk/target.js';
import type { IR } from '../src/sdk/ir.js';
import { loadInputs } from '../src/sdk/inputs.js';
import { pythonTarget, PYTHON_RUNTIME_PROJECT, PYTHON_SAMPLES } from '../src/sdk/python/index.js';
import { pyName, uniquePyNames } from '../src/sdk/python/names.js';
import { pyprojectVersion } from '../src/sdk/python/render-project.js';
import { connectionNodeType } from '../src/sdk/python/render-types.js';
import { fixtureInputs, ROOT } from './sdk-fixture.js';

let ir: IR;
let files: Map<string, string>;
const generate = async (from: IR): Promise<GeneratedFile[]> =>
  pythonTarget.generate(from, { root: ROOT, format: (_path, content) => Promise.resolve(content) });

beforeAll(async () => {
  ir = buildIR(loadInputs(ROOT));
  files = new Map((await generate(ir)).map((f) => [f.path, f.content]));
});

describe('Python target', () => {
  it('does not copy the runtime and pins agentgraph-runtime to its own version', () => {
    expect([...files.keys()].filter((p) => p.includes('runtime'))).toEqual([]);
    const version = pyprojectVersion(readFileSync(join(ROOT, PYTHON_RUNTIME_PROJECT), 'utf8'));
    const pyproject = files.get('pyproject.toml')!;
    expect(pyproject).toContain(`version = "${version}"`);
    expect(pyproject).toContain(`dependencies = ["agentgraph-runtime==${version}"]`);
    for (const module of ['client', 'errors', 'operations']) {
      const text = files.get(`agentgraph/${module}.py`)!;
      expect(text).toMatch(/^from agentgraph_runtime\./m);
      expect(text).not.toMatch(/from \.runtime/);
    }
  });

  it('reads the version of the [project] table only', () => {
    const toml =
      '[tool.x]\nversion = "9"\n[project]\nname = "a"\nversion = "1.2.3"\n[tool.y]\nversion = "8"\n';
    expect(pyprojectVersion(toml)).toBe('1.2.3');
    expect(() => pyprojectVersion('[project]\nname = "a"\n')).toThrow(/no version/);
  });

  it('maps GraphQL names to snake_case Python names and refuses collisions', () => {
    expect(['roomId', 'expectedVersion', 'RoomByID', '__typename', 'from', 'id'].map(pyName)).toEqual([
      'room_id',
      'expected_version',
      'room_by_id',
      'typename',
      'from_',
      'id',
    ]);
    expect(() => uniquePyNames(['roomId', 'room_id'], 'input X')).toThrow(
      'input X: roomId and room_id both become room_id in Python',
    );
  });

  it('renders snake_case fields with their wire names, typed paginators and both clients', () => {
    const types = files.get('agentgraph/types.py')!;
    expect(types).toMatch(
      /^ {4}expected_version: Optional\[int\] = _field\(default=None, metadata=\{"graphql": "expectedVersion"\}\)$/m,
    );
    const client = files.get('agentgraph/client.py')!;
    expect(client).toMatch(/^class AsyncAgentGraph:$/m);
    expect(client).toMatch(/^class AgentGraph:$/m);
    expect(client).not.toMatch(/\*\*options|AbortSignal|signal/);
    expect(client).toContain(
      'def paginate_rooms(self, *, first: Optional[int] = None, timeout_ms: Optional[float] = None) -> AsyncIterator[RoomsDataRoomsEdgesNode]:',
    );
    expect(client).toContain(
      'def paginate_rooms(self, *, first: Optional[int] = None, timeout_ms: Optional[float] = None) -> Iterator[RoomsDataRoomsEdgesNode]:',
    );
    expect(client).toMatch(/async def room_messages\(self, \*, room_id: str,/);
    expect(client).toContain('variables["roomId"] = encode(room_id)');
    expect(client).toMatch(/^ {8}token_provider: Optional\[SyncTokenProvider\] = None,$/m);
  });

  it('names the node type of a connection after its path (fragments on the node type included)', () => {
    const rooms = ir.operations.find((o) => o.name === 'Rooms')!;
    expect(connectionNodeType(rooms, rooms.connections[0]!.path)).toBe('RoomsDataRoomsEdgesNode');
    const messages = ir.operations.find((o) => o.name === 'RoomMessages')!;
    expect(connectionNodeType(messages, messages.connections[0]!.path)).toBe(
      'RoomMessagesDataRoomMessagesEdgesNode',
    );
    const fixture = buildIR(
      fixtureInputs({
        'notes.graphql':
          'query Notes($after: String) { notes(after: $after) { edges { node { ... on Note { text } } } pageInfo { hasNextPage endCursor } } }',
      }),
    );
    const notes = fixture.operations.find((o) => o.name === 'Notes')!;
    expect(connectionNodeType(notes, ['notes'])).toBe('NotesDataNotesEdgesNode');
  });

  it('quotes every hand-written sample whole in the README, and generates none (samples/ is not its to write)', () => {
    const readme = files.get('README.md')!;
    expect([...files.keys()].filter((p) => p.startsWith('samples/'))).toEqual([]);
    const dir = join(ROOT, PYTHON_SAMPLES);
    const quoted = readdirSync(dir).filter(
      (name) => name.endsWith('.py') && !['outbox_poster.py', 'sidecar_agent.py'].includes(name),
    );
    expect(quoted.length).toBe(6);
    for (const name of quoted) expect(readme, name).toContain(readFileSync(join(dir, name), 'utf8').trim());
    for (const heading of [
      'Install',
      'Quickstart',
      'Async, and cancelling',
      'Errors',
      'Pagination',
      'Privacy gate',
      'Outbox',
      'Subscriptions',
    ])
      expect(readme).toContain(`## ${heading}\n`);
  });
});
