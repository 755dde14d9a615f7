/**
 * agentgraph/client.py: `AsyncAgentGraph` (async methods on the runtime's AgentGraphClient) and `AgentGraph` (the
 * same methods, blocking, on SyncAgentGraphClient), as openai-python ships `AsyncOpenAI` beside `OpenAI`. One method
 * per query and mutation: snake_case keyword arguments with their types (the wire names are the keys of the
 * variables dict), the typed result dataclass out; a `paginate_…` iterator per connection yielding the node
 * dataclass. Every call goes through the runtime (retries, idempotency, privacy gate, typed errors); cancellation
 * is asyncio's (cancel the task), so no method takes a signal.
 */
import type { IR, OperationIR } from '../ir.js';
import { doc, HEADER, pyName, snake, str, uniquePyNames } from './names.js';
import { connectionNodeType, inputType } from './render-types.js';

type Flavor = 'async' | 'sync';

function params(op: OperationIR, skip?: string): { decl: string[]; fill: string[] } {
  const vars = op.variables.filter((v) => !(op.idempotent && v.name === 'idempotencyKey') && v.name !== skip);
  uniquePyNames([...vars.map((v) => v.name), 'idempotencyKey', 'timeoutMs'], `operation ${op.name}`);
  const required = vars.filter((v) => v.required);
  const optional = vars.filter((v) => !v.required);
  const decl = [
    ...required.map((v) => `${pyName(v.name)}: ${inputType(v.type)}`),
    ...optional.map((v) => {
      const t = inputType(v.type);
      return `${pyName(v.name)}: ${t.startsWith('Optional[') ? t : `Optional[${t}]`} = None`;
    }),
  ];
  const fill = [
    ...required.map((v) => `        variables[${str(v.name)}] = encode(${pyName(v.name)})`),
    ...optional.map(
      (v) =>
        `        if ${pyName(v.name)} is not None:\n            variables[${str(v.name)}] = encode(${pyName(v.name)})`,
    ),
  ];
  return { decl, fill };
}

function note(op: OperationIR): string | undefined {
  if (op.idempotent)
    return 'Idempotent: one key per call, resent on every retry; pass idempotency_key= to repeat a call across restarts.';
  if (op.kind === 'mutation') return 'Not idempotent: never retried.';
  return undefined;
}

function method(op: OperationIR, flavor: Flavor): string {
  const { decl, fill } = params(op);
  const all = ['self', '*', ...decl];
  if (op.idempotent) all.push('idempotency_key: Optional[str] = None');
  all.push('timeout_ms: Optional[float] = None');
  const call = op.idempotent
    ? 'idempotency_key=idempotency_key, timeout_ms=timeout_ms'
    : 'timeout_ms=timeout_ms';
  const [def, wait] = flavor === 'async' ? ['async def', 'await '] : ['def', ''];
  return (
    `    ${def} ${snake(op.name)}(${all.join(', ')}) -> Result[${op.name}Data]:\n` +
    doc(
      [
        op.description,
        `${op.kind} ${op.name}.`,
        note(op),
        op.deprecationReason ? `Deprecated: ${op.deprecationReason}` : undefined,
      ],
      '        ',
    ) +
    '        variables: Dict[str, Any] = {}\n' +
    (fill.length ? `${fill.join('\n')}\n` : '') +
    `        raw = ${wait}self.client.execute(operations.${op.name}, variables, ${call})\n` +
    `        return Result(decode(${op.name}Data, raw.data), raw)\n`
  );
}

function pager(op: OperationIR, flavor: Flavor): string[] {
  return op.connections.map((c) => {
    const suffix = op.connections.length === 1 ? '' : `_${c.path.map(snake).join('_')}`;
    const { decl, fill } = params(op, c.afterVariable);
    const all = ['self', '*', ...decl, 'timeout_ms: Optional[float] = None'];
    const path = c.path.map((p) => `.get(${str(p)}) or {}`).join(')');
    const select = `lambda data: ${'('.repeat(c.path.length - 1)}data${path}`;
    const node = connectionNodeType(op, c.path);
    const item = node === 'Dict[str, Any]' ? 'lambda node: node' : `lambda node: decode(${node}, node)`;
    const iterator = flavor === 'async' ? 'AsyncIterator' : 'Iterator';
    return (
      `    def paginate_${snake(op.name)}${suffix}(${all.join(', ')}) -> ${iterator}[${node}]:\n` +
      doc(
        [
          `Every ${c.nodeTypeName} of ${op.name} at ${c.path.join('.')}, page after page; the next page is requested ` +
            'only when the consumer wants its first node.',
        ],
        '        ',
      ) +
      '        variables: Dict[str, Any] = {}\n' +
      (fill.length ? `${fill.join('\n')}\n` : '') +
      `        return self.client.paginate(operations.${op.name}, variables, ${select}, ${item}, timeout_ms=timeout_ms)\n`
    );
  });
}

/** The options of the runtime client, spelled out (typed keyword arguments, no `**options`). */
function constructor(flavor: Flavor): string[] {
  const [transport, http, tokens, clock, client] =
    flavor === 'async'
      ? ['httpx.AsyncBaseTransport', 'httpx.AsyncClient', 'TokenProvider', 'Clock', 'AgentGraphClient']
      : ['httpx.BaseTransport', 'httpx.Client', 'SyncTokenProvider', 'SyncClock', 'SyncAgentGraphClient'];
  const options: Array<[string, string, string]> = [
    ['transport', `Optional[${transport}]`, 'None'],
    ['http_client', `Optional[${http}]`, 'None'],
    ['headers', 'Optional[Mapping[str, str]]', 'None'],
    ['token_provider', `Optional[${tokens}]`, 'None'],
    ['clock', `Optional[${clock}]`, 'None'],
    ['random', 'Optional[Callable[[], float]]', 'None'],
    ['new_key', 'Optional[Callable[[], str]]', 'None'],
    ['timeout_ms', 'Optional[float]', 'None'],
    ['retry', 'Optional[Mapping[str, Any]]', 'None'],
    ['max_payload_bytes', 'Optional[float]', 'None'],
    ['privacy_policy', 'Optional[PrivacyPolicy]', 'None'],
    ['detectors', 'Sequence[Detector]', 'DETECTORS'],
    ['logger', 'Optional[Logger]', 'None'],
    ['capabilities', 'Optional[Mapping[str, Any]]', 'None'],
  ];
  return [
    '    def __init__(',
    '        self,',
    '        base_url: str,',
    '        *,',
    ...options.map(([name, type, value]) => `        ${name}: ${type} = ${value},`),
    '    ) -> None:',
    `        self.client = ${client}(`,
    '            base_url, ERROR_TABLE, error_classes=ERROR_CLASSES,',
    `            ${options.map(([name]) => `${name}=${name}`).join(', ')},`,
    '        )',
  ];
}

function clientClass(ops: OperationIR[], flavor: Flavor): string[] {
  const name = flavor === 'async' ? 'AsyncAgentGraph' : 'AgentGraph';
  const summary =
    flavor === 'async'
      ? [
          '    """The AgentGraph API, async: every method is a coroutine (cancel its task to stop it). `client` is the',
          "    runtime's AgentGraphClient (subscriptions(), execute(), the outbox's client_send). Use it with",
          '    `async with`, or call `aclose()`."""',
        ]
      : [
          '    """The AgentGraph API, blocking, on httpx.Client: the same methods, retries, idempotency and privacy gate',
          "    as AsyncAgentGraph. `client` is the runtime's SyncAgentGraphClient. Use it with `with`, or call",
          '    `close()`. Subscriptions and the outbox need AsyncAgentGraph."""',
        ];
  const lifecycle =
    flavor === 'async'
      ? [
          '    async def aclose(self) -> None:',
          '        await self.client.aclose()',
          '',
          `    async def __aenter__(self) -> "${name}":`,
          '        return self',
          '',
          '    async def __aexit__(self, *exc: Any) -> None:',
          '        await self.aclose()',
        ]
      : [
          '    def close(self) -> None:',
          '        self.client.close()',
          '',
          `    def __enter__(self) -> "${name}":`,
          '        return self',
          '',
          '    def __exit__(self, *exc: Any) -> None:',
          '        self.close()',
        ];
  return [
    '',
    `class ${name}:`,
    ...summary,
    '',
    ...constructor(flavor),
    '',
    ...lifecycle,
    '',
    ...ops.flatMap((op) => [method(op, flavor), ...pager(op, flavor)]),
  ];
}

export function renderClient(ir: IR): string {
  const ops = ir.operations.filter((op) => op.kind !== 'subscription');
  const types = [
    ...new Set([
      ...ops.map((op) => `${op.name}Data`),
      ...ops.flatMap((op) => op.connections.map((c) => connectionNodeType(op, c.path))),
    ]),
  ]
    .filter((t) => t !== 'Dict[str, Any]')
    .sort();
  return [
    HEADER,
    '"""The AgentGraph API: `AsyncAgentGraph` (async) and `AgentGraph` (blocking), one method per operation."""',
    'from __future__ import annotations',
    '',
    'from dataclasses import dataclass',
    'from typing import Any, AsyncIterator, Callable, Dict, Generic, Iterator, List, Mapping, Optional, Sequence, TypeVar',
    '',
    'import httpx',
    'from agentgraph_runtime.call import ExecuteResult',
    'from agentgraph_runtime.client import AgentGraphClient, TokenProvider',
    'from agentgraph_runtime.clock import Clock, SyncClock',
    'from agentgraph_runtime.codec import decode, encode',
    'from agentgraph_runtime.detectors import DETECTORS, Detector',
    'from agentgraph_runtime.logger import Logger',
    'from agentgraph_runtime.privacy import PrivacyPolicy',
    'from agentgraph_runtime.sync_client import SyncAgentGraphClient, SyncTokenProvider',
    '',
    'from . import operations',
    'from .errors import ERROR_CLASSES, ERROR_TABLE',
    'from .types import *  # noqa: F401,F403 - the argument and result types',
    `from .types import ${types.join(', ')}`,
    '',
    'T = TypeVar("T")',
    '',
    '',
    '@dataclass',
    'class Result(Generic[T]):',
    '    """A typed result with the call metadata (attempts, replayed, the idempotency key)."""',
    '',
    '    data: T',
    '    raw: ExecuteResult',
    '',
    ...clientClass(ops, 'async'),
    ...clientClass(ops, 'sync'),
    '',
    `__all__ = ["AgentGraph", "AsyncAgentGraph", "Result", "List"]`,
    '',
  ].join('\n');
}
