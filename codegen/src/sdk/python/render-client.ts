/**
 * agentgraph/client.py: `AgentGraph`, one async method per query and mutation (typed arguments in, the typed
 * result dataclass out) and a `paginate_…` async generator per connection. Every call goes through the runtime's
 * AgentGraphClient (retries, idempotency, privacy gate, typed errors).
 */
import type { IR, OperationIR } from '../ir.js';
import { doc, HEADER, identifier, snake, str } from './names.js';
import { inputType } from './render-types.js';

function params(op: OperationIR, skip?: string): { decl: string[]; fill: string[] } {
  const vars = op.variables.filter((v) => !(op.idempotent && v.name === 'idempotencyKey') && v.name !== skip);
  const required = vars.filter((v) => v.required);
  const optional = vars.filter((v) => !v.required);
  const decl = [
    ...required.map((v) => `${identifier(v.name)}: ${inputType(v.type)}`),
    ...optional.map((v) => {
      const t = inputType(v.type);
      return `${identifier(v.name)}: ${t.startsWith('Optional[') ? t : `Optional[${t}]`} = None`;
    }),
  ];
  const fill = [
    ...required.map((v) => `        variables[${str(v.name)}] = encode(${identifier(v.name)})`),
    ...optional.map(
      (v) =>
        `        if ${identifier(v.name)} is not None:\n            variables[${str(v.name)}] = encode(${identifier(v.name)})`,
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

function method(op: OperationIR): string {
  const { decl, fill } = params(op);
  const all = ['self', ...(decl.length ? ['*', ...decl] : ['*']), 'signal: Optional[AbortSignal] = None'];
  if (op.idempotent) all.push('idempotency_key: Optional[str] = None');
  const call = op.idempotent ? 'signal=signal, idempotency_key=idempotency_key' : 'signal=signal';
  return (
    `    async def ${snake(op.name)}(${all.join(', ')}) -> Result[${op.name}Data]:\n` +
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
    `        raw = await self.client.execute(operations.${op.name}, variables, ${call})\n` +
    `        return Result(decode(${op.name}Data, raw.data), raw)\n`
  );
}

function pager(op: OperationIR): string[] {
  return op.connections.map((c) => {
    const suffix = op.connections.length === 1 ? '' : `_${c.path.map(snake).join('_')}`;
    const { decl, fill } = params(op, c.afterVariable);
    const all = ['self', '*', ...decl, 'signal: Optional[AbortSignal] = None'];
    const path = c.path.map((p) => `.get(${str(p)}) or {}`).join(')');
    const select = `lambda data: ${'('.repeat(c.path.length - 1)}data${path}`;
    return (
      `    def paginate_${snake(op.name)}${suffix}(${all.join(', ')}) -> AsyncIterator[Any]:\n` +
      doc(
        [`Every ${c.nodeTypeName} of ${op.name} at ${c.path.join('.')}, page after page (nodes as JSON).`],
        '        ',
      ) +
      '        variables: Dict[str, Any] = {}\n' +
      (fill.length ? `${fill.join('\n')}\n` : '') +
      `        return self.client.paginate(operations.${op.name}, variables, ${select}, signal=signal)\n`
    );
  });
}

export function renderClient(ir: IR): string {
  const ops = ir.operations.filter((op) => op.kind !== 'subscription');
  const types = [...new Set(ops.map((op) => `${op.name}Data`))].sort();
  return [
    HEADER,
    '"""The AgentGraph API: one async method per operation, on the runtime client."""',
    'from __future__ import annotations',
    '',
    'from dataclasses import dataclass',
    'from typing import Any, AsyncIterator, Dict, Generic, List, Optional, TypeVar',
    '',
    'from . import operations',
    'from .errors import ERROR_CLASSES, ERROR_TABLE',
    'from agentgraph_runtime.client import AgentGraphClient, ExecuteResult',
    'from agentgraph_runtime.clock import AbortSignal',
    'from agentgraph_runtime.codec import decode, encode',
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
    '',
    'class AgentGraph:',
    '    """The AgentGraph API. Keyword arguments go to the runtime AgentGraphClient (transport, token_provider,',
    '    clock, retry, privacy_policy, logger, ...)."""',
    '',
    '    def __init__(self, base_url: str, **options: Any) -> None:',
    '        self.client = AgentGraphClient(base_url, ERROR_TABLE, error_classes=ERROR_CLASSES, **options)',
    '',
    '    async def aclose(self) -> None:',
    '        await self.client.aclose()',
    '',
    '    async def __aenter__(self) -> "AgentGraph":',
    '        return self',
    '',
    '    async def __aexit__(self, *exc: Any) -> None:',
    '        await self.aclose()',
    '',
    ...ops.flatMap((op) => [method(op), ...pager(op)]),
    '',
    `__all__ = ["AgentGraph", "Result", "List"]`,
    '',
  ].join('\n');
}
