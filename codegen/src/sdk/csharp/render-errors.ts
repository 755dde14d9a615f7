/** Generated/Errors.g.cs: one exception class per code of schemas/errors.json and the registry the client uses. */
import type { IR } from '../ir.js';
import { errorClassName, HEADER, NAMESPACE, str, summary } from './names.js';

export function renderErrors(ir: IR): string {
  const classes = ir.errors.map(
    (e) =>
      summary([`${e.code} (HTTP ${e.http}, retry: ${e.retry}): ${e.description}`]) +
      `public sealed class ${errorClassName(e.code)}(AgentGraphErrorInit init) : AgentGraphException(init);\n`,
  );
  const rows = ir.errors.map(
    (e) => `        new(${str(e.code)}, ${e.http}, ${str(e.retry)}, ${str(e.description)}),`,
  );
  const factories = ir.errors.map(
    (e) => `            [${str(e.code)}] = init => new ${errorClassName(e.code)}(init),`,
  );
  return [
    HEADER,
    '#nullable enable',
    `namespace ${NAMESPACE};`,
    '',
    ...classes,
    summary(['schemas/errors.json: the codes, and a factory per code so every thrown error has its class.']) +
      'public static class AgentGraphErrors\n{',
    summary(['The table, in its order.'], '    ') +
      '    public static IReadOnlyList<ErrorCodeEntry> Codes { get; } =\n    [',
    ...rows,
    '    ];',
    '',
    summary(['The registry AgentGraphClient is built with.'], '    ') +
      '    public static ErrorRegistry Registry { get; } = new(\n        Codes,\n        new Dictionary<string, Func<AgentGraphErrorInit, AgentGraphException>>\n        {',
    ...factories,
    '        });',
    '}',
    '',
  ].join('\n');
}
