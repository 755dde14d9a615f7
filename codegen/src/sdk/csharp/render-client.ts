/**
 * Generated/AgentGraph.g.cs: `AgentGraph`, one async method per query and mutation (typed variables in, the typed
 * result record out) and a `Paginate…Async` per connection (IAsyncEnumerable of nodes as JSON). Every call goes
 * through the runtime's AgentGraphClient (retries, idempotency, privacy gate, typed errors).
 */
import type { IR, OperationIR } from '../ir.js';
import { HEADER, identifier, NAMESPACE, str, summary, upperFirst } from './names.js';
import { inputType } from './render-types.js';

function params(op: OperationIR): { decl: string[]; fill: string[] } {
  const vars = op.variables.filter((v) => !(op.idempotent && v.name === 'idempotencyKey'));
  const required = vars.filter((v) => v.required);
  const optional = vars.filter((v) => !v.required);
  const decl = [
    ...required.map((v) => `${inputType(v.type)} ${identifier(v.name)}`),
    ...optional.map((v) => `${inputType(v.type).replace(/\?$/, '')}? ${identifier(v.name)} = null`),
  ];
  const fill = [
    ...required.map(
      (v) =>
        `        variables[${str(v.name)}] = JsonSerializer.SerializeToNode(${identifier(v.name)}, AgentGraphJson.Options);`,
    ),
    ...optional.map(
      (v) =>
        `        if (${identifier(v.name)} is not null) variables[${str(v.name)}] = JsonSerializer.SerializeToNode(${identifier(v.name)}, AgentGraphJson.Options);`,
    ),
  ];
  return { decl, fill };
}

function note(op: OperationIR): string | undefined {
  if (op.idempotent)
    return 'Idempotent: one key per call, resent on every retry; pass CallOptions.IdempotencyKey to repeat a call across restarts.';
  if (op.kind === 'mutation') return 'Not idempotent: never retried.';
  return undefined;
}

function method(op: OperationIR): string {
  const { decl, fill } = params(op);
  const all = [...decl, 'CallOptions? options = null', 'CancellationToken cancellationToken = default'];
  return (
    summary([op.description, `${op.kind} ${op.name}.`, note(op)], '    ') +
    (op.deprecationReason ? `    [Obsolete(${str(op.deprecationReason)})]\n` : '') +
    `    public async Task<Result<${op.name}Data>> ${op.name}Async(${all.join(', ')})\n    {\n` +
    '        var variables = new JsonObject();\n' +
    (fill.length ? `${fill.join('\n')}\n` : '') +
    `        var result = await Client.ExecuteAsync(AgentGraphOperations.${op.name}, variables, options, cancellationToken).ConfigureAwait(false);\n` +
    `        return new Result<${op.name}Data>(result.Data.Deserialize<${op.name}Data>(AgentGraphJson.Options)!, result);\n    }\n`
  );
}

function pager(op: OperationIR): string[] {
  return op.connections.map((c) => {
    const suffix = op.connections.length === 1 ? '' : c.path.map(upperFirst).join('');
    const { decl, fill } = params(op);
    const all = [
      ...decl.filter((d) => !/ after( =|$)/.test(d)),
      'CallOptions? options = null',
      'CancellationToken cancellationToken = default',
    ];
    const path = c.path.map((p) => `?[${str(p)}]`).join('');
    return (
      summary([`Every ${c.nodeTypeName} of ${op.name} at ${c.path.join('.')}, page after page.`], '    ') +
      `    public IAsyncEnumerable<JsonNode?> Paginate${op.name}${suffix}Async(${all.join(', ')})\n    {\n` +
      '        var variables = new JsonObject();\n' +
      (fill.filter((f) => !f.includes(`variables["${c.afterVariable}"]`)).join('\n') + '\n') +
      `        return Client.PaginateAsync(AgentGraphOperations.${op.name}, variables, data => data${path}, options, cancellationToken);\n    }\n`
    );
  });
}

export function renderClient(ir: IR): string {
  const ops = ir.operations.filter((op) => op.kind !== 'subscription');
  return [
    HEADER,
    '#nullable enable',
    '#pragma warning disable CS0618 // generated code calls deprecated operations',
    'using System.Text.Json;',
    'using System.Text.Json.Nodes;',
    'using System.Text.Json.Serialization;',
    '',
    `namespace ${NAMESPACE};`,
    '',
    summary(['JSON settings of the generated types.']) +
      'public static class AgentGraphJson\n{\n' +
      summary(['Web defaults; enums as their GraphQL names; nulls omitted.'], '    ') +
      '    public static JsonSerializerOptions Options { get; } = new(JsonSerializerDefaults.Web)\n    {\n' +
      '        DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,\n    };\n}\n',
    summary(['A typed result with the call metadata (attempts, replayed, the idempotency key).']) +
      'public sealed record Result<T>(T Data, ExecuteResult Raw);\n',
    summary(['The AgentGraph API: one method per operation, on the runtime client.']) +
      'public sealed class AgentGraph : IDisposable\n{',
    summary(['Creates the SDK (the error registry is filled in).'], '    ') +
      '    public AgentGraph(AgentGraphClientOptions options)\n    {\n' +
      '        ArgumentNullException.ThrowIfNull(options);\n' +
      '        Client = new AgentGraphClient(options with { Errors = options.Errors ?? AgentGraphErrors.Registry });\n    }\n',
    summary(['The runtime client (ExecuteAsync, PaginateAsync, capabilities).'], '    ') +
      '    public AgentGraphClient Client { get; }\n',
    ...ops.flatMap((op) => [method(op), ...pager(op)]),
    summary(['Disposes the HTTP client.'], '    ') + '    public void Dispose() => Client.Dispose();',
    '}',
    '',
  ].join('\n');
}
