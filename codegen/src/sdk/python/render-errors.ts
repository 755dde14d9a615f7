/** agentgraph/errors.py: schemas/errors.json as data and one exception class per code. */
import type { IR } from '../ir.js';
import { doc, errorClassName, HEADER, str } from './names.js';

export function renderErrors(ir: IR): string {
  const table = JSON.stringify(
    {
      codes: ir.errors.map((e) => ({
        code: e.code,
        http: e.http,
        retry: e.retry,
        description: e.description,
      })),
    },
    null,
    4,
  );
  return [
    HEADER,
    '"""The error table (schemas/errors.json) and one AgentGraphError subclass per code."""',
    'from typing import Any, Dict, Type',
    '',
    'from agentgraph_runtime.errors import AgentGraphError',
    '',
    `ERROR_TABLE: Dict[str, Any] = ${table}`,
    '',
    ...ir.errors.map(
      (e) =>
        `class ${errorClassName(e.code)}(AgentGraphError):\n` +
        doc([`${e.code} (HTTP ${e.http}, retry: ${e.retry}). ${e.description}`], '    ') +
        '\n',
    ),
    '#: code -> class, handed to the runtime so it raises these classes.',
    'ERROR_CLASSES: Dict[str, Type[AgentGraphError]] = {',
    ...ir.errors.map((e) => `    ${str(e.code)}: ${errorClassName(e.code)},`),
    '}',
    '',
  ].join('\n');
}
