/** The package around the generated modules: pyproject.toml, README.md, agentgraph/__init__.py and the tests. */
import type { InputTypeRef, IR } from '../ir.js';
import { HEADER, pyName, snake } from './names.js';
import { connectionNodeType } from './render-types.js';

/** `version = "…"` of a pyproject.toml's [project] table (the runtime's, which the generated SDK pins). */
export function pyprojectVersion(pyproject: string): string {
  const project = /^\[project\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(pyproject)?.[1] ?? '';
  const version = /^version\s*=\s*"([^"]+)"\s*$/m.exec(project)?.[1];
  if (!version) throw new Error('sdk-templates/python/pyproject.toml: no version = "…" in [project].');
  return version;
}

export function renderPyproject(runtimeVersion: string): string {
  return [
    HEADER,
    '[build-system]',
    'requires = ["setuptools>=61"]',
    'build-backend = "setuptools.build_meta"',
    '',
    '[project]',
    'name = "agentgraph"',
    `version = "${runtimeVersion}"`,
    'description = "The AgentGraph SDK for Python: sync and async clients with retries, idempotency, a privacy gate, an outbox and an inbox."',
    'readme = "README.md"',
    'license = { text = "Apache-2.0" }',
    'requires-python = ">=3.10"',
    'classifiers = [',
    '  "License :: OSI Approved :: Apache Software License",',
    '  "Programming Language :: Python :: 3",',
    '  "Typing :: Typed",',
    ']',
    '# The runtime (sdk-templates/python) of exactly this version; it brings httpx and tenacity.',
    `dependencies = ["agentgraph-runtime==${runtimeVersion}"]`,
    '',
    '[project.optional-dependencies]',
    `intents = ["agentgraph-runtime[intents]==${runtimeVersion}"]`,
    'test = ["pytest>=7"]',
    '',
    '[tool.setuptools.packages.find]',
    'include = ["agentgraph*"]',
    '',
    '[tool.setuptools.package-data]',
    'agentgraph = ["py.typed"]',
    '',
    '[tool.pytest.ini_options]',
    'testpaths = ["tests"]',
    '',
  ].join('\n');
}

/**
 * tests/conftest.py: the tests run from source, the generated package (sdks/python) and, in this repository, the
 * runtime it depends on (sdk-templates/python); elsewhere the installed agentgraph-runtime.
 */
export function renderConftest(): string {
  return [
    HEADER,
    'import sys',
    'from pathlib import Path',
    '',
    'SDK = Path(__file__).resolve().parents[1]  # sdks/python: the generated package `agentgraph`',
    'RUNTIME = SDK.parents[1] / "sdk-templates" / "python"  # agentgraph-runtime from source, in the repository',
    'for path in (RUNTIME, SDK):',
    '    if path.is_dir() and str(path) not in sys.path:',
    '        sys.path.insert(0, str(path))',
    '',
  ].join('\n');
}

export function renderInit(): string {
  return [
    HEADER,
    '"""The AgentGraph SDK: `AgentGraph` (blocking) and `AsyncAgentGraph` (async), one method per operation, their',
    "types and errors; the runtime's public names (errors, privacy policy, clients) are re-exported from",
    '`agentgraph_runtime`."""',
    'from agentgraph_runtime import *  # noqa: F401,F403 - AgentGraphError, PrivacyPolicy, TokenProvider, ...',
    '',
    'from .client import AgentGraph, AsyncAgentGraph, Result',
    'from .errors import ERROR_CLASSES, ERROR_TABLE',
    'from .operations import BY_NAME, SCHEMA_VERSION',
    '',
    '__all__ = ["AgentGraph", "AsyncAgentGraph", "BY_NAME", "ERROR_CLASSES", "ERROR_TABLE", "Result", "SCHEMA_VERSION"]',
    '',
  ].join('\n');
}

const isScalar = (t: InputTypeRef, names: readonly string[]): boolean =>
  t.kind === 'NON_NULL' ? isScalar(t.ofType, names) : t.kind === 'SCALAR' && names.includes(t.name);

/** A query with no required variables (the example call of the tests and the README). */
const simpleQuery = (ir: IR) =>
  ir.operations.find((o) => o.kind === 'query' && o.variables.every((v) => !v.required));

export function renderTests(ir: IR): string {
  const example = simpleQuery(ir);
  // A paginated query whose only required variable is a camelCase ID or String: snake_case in, wire name out
  // (the answer nests the page along the connection's path).
  const paged = ir.operations.find((o) => {
    const required = o.variables.filter((v) => v.required);
    return (
      o.kind === 'query' &&
      o.connections.length === 1 &&
      connectionNodeType(o, o.connections[0]!.path) !== 'Dict[str, Any]' &&
      required.length === 1 &&
      required[0]!.name !== pyName(required[0]!.name) &&
      isScalar(required[0]!.type, ['ID', 'String'])
    );
  });
  const lines = [
    HEADER,
    '"""The generated SDK: documents match the manifest, error classes match the table, snake_case names map to the',
    'wire names, both clients send a method\'s document and decode its result, paginators yield node dataclasses."""',
    'import asyncio',
    'import dataclasses',
    'import hashlib',
    'import json',
    'import re',
    'from pathlib import Path',
    '',
    'import httpx',
    'from agentgraph_runtime.errors import AgentGraphError',
    '',
    'import agentgraph',
    'from agentgraph import AgentGraph, AsyncAgentGraph, errors, operations, types',
    '',
    'ROOT = Path(__file__).resolve().parents[3]',
    '',
    '',
    'def test_documents_are_the_manifest_documents() -> None:',
    '    manifest = json.loads((ROOT / "schemas" / "operations.manifest.json").read_text())',
    '    by_name = {op["name"]: op for op in manifest["operations"]}',
    '    assert sorted(by_name) == sorted(operations.BY_NAME)',
    '    for name, spec in operations.BY_NAME.items():',
    '        assert spec.document == by_name[name]["document"], name',
    '        assert hashlib.sha256(spec.document.encode()).hexdigest() == by_name[name]["sha256"], name',
    '    assert operations.SCHEMA_VERSION == manifest["schemaVersion"]',
    '',
    '',
    'def test_one_error_class_per_code_of_the_table() -> None:',
    '    table = json.loads((ROOT / "schemas" / "errors.json").read_text())',
    '    assert [e["code"] for e in table["codes"]] == list(errors.ERROR_CLASSES)',
    '    for code, cls in errors.ERROR_CLASSES.items():',
    '        assert issubclass(cls, AgentGraphError)',
    '        assert cls.__name__ == "".join(p.capitalize() for p in code.split("_")) + "Error"',
    '',
    '',
    'def test_dataclass_fields_are_snake_case_and_keep_their_wire_names() -> None:',
    '    mapped = 0',
    '    for cls in vars(types).values():',
    '        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):',
    '            continue',
    '        for f in dataclasses.fields(cls):',
    '            assert re.fullmatch(r"[a-z][a-z0-9_]*", f.name), f"{cls.__name__}.{f.name}"',
    '            wire = f.metadata.get("graphql", f.name)',
    '            snake = re.sub(r"([a-z0-9])([A-Z])", r"\\1_\\2", wire)',
    '            snake = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\\1_\\2", snake).lower().lstrip("_")',
    '            assert f.name in (snake, snake + "_"), f"{cls.__name__}.{f.name} <- {wire}"',
    '            mapped += wire != f.name',
    '    assert mapped > 0',
    '',
    '',
    'def test_both_clients_raise_the_generated_classes() -> None:',
    '    def handler(request: httpx.Request) -> httpx.Response:',
    '        body = {"errors": [{"message": "no", "extensions": {"code": "FORBIDDEN"}}]}',
    '        return httpx.Response(403, json=body)',
    '',
    '    async def run() -> None:',
    '        async with AsyncAgentGraph("https://api.test/graphql", transport=httpx.MockTransport(handler)) as api:',
    '            try:',
    '                await api.client.refresh_capabilities()',
    '            except errors.ForbiddenError as err:',
    '                assert err.code == "FORBIDDEN" and err.give_up_reason == "not-retryable"',
    '            else:',
    '                raise AssertionError("expected ForbiddenError")',
    '',
    '    asyncio.run(run())',
    '    with AgentGraph("https://api.test/graphql", transport=httpx.MockTransport(handler)) as api:',
    '        try:',
    '            api.client.refresh_capabilities()',
    '        except errors.ForbiddenError as err:',
    '            assert err.attempts == 1',
    '        else:',
    '            raise AssertionError("expected ForbiddenError")',
  ];
  if (example) {
    const name = snake(example.name);
    lines.push(
      '',
      '',
      `def test_${name}_sends_its_document_and_decodes_the_result_in_both_clients() -> None:`,
      '    seen = []',
      '',
      '    def handler(request: httpx.Request) -> httpx.Response:',
      '        seen.append(json.loads(request.content))',
      '        return httpx.Response(200, json={"data": {}})',
      '',
      '    async def run() -> None:',
      '        async with AsyncAgentGraph("https://api.test/graphql", transport=httpx.MockTransport(handler)) as api:',
      `            result = await api.${name}()`,
      `            assert result.raw.attempts == 1 and isinstance(result.data, types.${example.name}Data)`,
      '',
      '    asyncio.run(run())',
      '    with AgentGraph("https://api.test/graphql", transport=httpx.MockTransport(handler)) as api:',
      `        assert isinstance(api.${name}().data, types.${example.name}Data)`,
      `    assert [s["operationName"] for s in seen] == [${JSON.stringify(example.name)}] * 2`,
      `    assert seen[0]["query"] == seen[1]["query"] == operations.${example.name}.document`,
    );
  }
  if (paged) {
    const c = paged.connections[0]!;
    const v = paged.variables.find((x) => x.required)!;
    const node = connectionNodeType(paged, c.path);
    const call = `paginate_${snake(paged.name)}(${pyName(v.name)}="v-1")`;
    lines.push(
      '',
      '',
      `def test_paginate_${snake(paged.name)}_maps_${pyName(v.name)}_and_yields_${node}() -> None:`,
      '    seen = []',
      '',
      '    def handler(request: httpx.Request) -> httpx.Response:',
      '        variables = json.loads(request.content)["variables"]',
      '        seen.append(variables)',
      '        last = variables.get("after") is not None',
      '        page = {"edges": [{"cursor": "c2" if last else "c1", "node": {}}],',
      '                "pageInfo": {"hasNextPage": not last, "endCursor": "c2" if last else "c1"}}',
      `        return httpx.Response(200, json={"data": ${c.path.reduceRight((inner, key) => `{${JSON.stringify(key)}: ${inner}}`, 'page')}})`,
      '',
      '    async def run() -> list:',
      '        async with AsyncAgentGraph("https://api.test/graphql", transport=httpx.MockTransport(handler)) as api:',
      `            return [node async for node in api.${call}]`,
      '',
      '    nodes = asyncio.run(run())',
      '    with AgentGraph("https://api.test/graphql", transport=httpx.MockTransport(handler)) as api:',
      `        nodes += list(api.${call})`,
      `    assert len(nodes) == 4 and all(isinstance(n, types.${node}) for n in nodes)`,
      `    assert [s[${JSON.stringify(v.name)}] for s in seen] == ["v-1"] * 4`,
      `    assert [s.get(${JSON.stringify(c.afterVariable)}) for s in seen] == [None, "c1"] * 2`,
    );
  }
  lines.push(
    '',
    '',
    'def test_the_package_is_typed() -> None:',
    '    assert (Path(agentgraph.__file__).parent / "py.typed").exists()',
    '',
  );
  return lines.join('\n');
}
