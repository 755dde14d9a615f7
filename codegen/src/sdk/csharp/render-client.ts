/**
 * Generated/AgentGraph.g.cs: `AgentGraphSdk` (not `AgentGraph`: a class named like its namespace's first part makes
 * callers write `global::`), one async method per query and mutation (typed variables in, the typed result record
 * out) and a `Paginate…Async` per connection (IAsyncEnumerable of the typed node records). Every call goes through
 * the runtime's AgentGraphClient (retries, idempotency, privacy gate, typed errors).
 */
import type { ConnectionIR, IR, OperationIR, OutputTypeRef } from '../ir.js';
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

/** `T` of `List<T>` / `T!`: the named type under the wrappers. */
function named(type: OutputTypeRef): OutputTypeRef {
  return type.kind === 'NON_NULL' || type.kind === 'LIST' ? named(type.ofType) : type;
}

/**
 * The record of a connection's nodes, as render-types names it (`<Op>Data` + the path + `Edges` + `Node`), or
 * JsonNode when the node has type-conditioned variants (kept as JSON there too).
 */
function nodeRecord(op: OperationIR, c: ConnectionIR): string {
  let shape = op.result;
  let name = `${op.name}Data`;
  for (const key of [...c.path, 'edges', 'node']) {
    const field = shape.fields.find((f) => f.responseName === key);
    const type = field && named(field.type);
    if (!type || type.kind !== 'OBJECT' || type.shape.variants) return 'JsonNode';
    name += upperFirst(key);
    shape = type.shape;
  }
  return name;
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
    const node = nodeRecord(op, c);
    const item = node === 'JsonNode' ? 'node' : `node.Deserialize<${node}>(AgentGraphJson.Options)!`;
    return (
      summary(
        [
          `Every ${c.nodeTypeName} of ${op.name} at ${c.path.join('.')}, page after page (a request per page, as the loop asks).`,
        ],
        '    ',
      ) +
      `    public async IAsyncEnumerable<${node}> Paginate${op.name}${suffix}Async(${all.join(', ').replace('CancellationToken cancellationToken', '[EnumeratorCancellation] CancellationToken cancellationToken')})\n    {\n` +
      '        var variables = new JsonObject();\n' +
      (fill.filter((f) => !f.includes(`variables["${c.afterVariable}"]`)).join('\n') + '\n') +
      `        await foreach (var node in Client.PaginateAsync(AgentGraphOperations.${op.name}, variables, data => data${path}, options, cancellationToken).ConfigureAwait(false))\n` +
      `            if (node is not null) yield return ${item};\n    }\n`
    );
  });
}

/**
 * A typed stream method for a subscription that resumes by sequence: a `$afterSeq` variable and a root field whose
 * selection has `seq` (the platform's convention, docs/architecture.md#sdks). Others (e.g. IntentUpdates) are
 * streamed with SubscriptionClient.SubscribeAsync&lt;T&gt; and options of their own.
 */
function stream(op: OperationIR): string[] {
  if (op.kind !== 'subscription' || !op.variables.some((v) => v.name === 'afterSeq')) return [];
  const root = op.result.fields.length === 1 ? op.result.fields[0]! : undefined;
  const type = root && named(root.type);
  if (!root || !type || type.kind !== 'OBJECT' || type.shape.variants) return [];
  if (!type.shape.fields.some((f) => f.responseName === 'seq')) return [];
  const event = `${op.name}Data${upperFirst(root.responseName)}`;
  const { decl, fill } = params({ ...op, variables: op.variables.filter((v) => v.name !== 'afterSeq') });
  const all = [
    ...decl,
    'long? afterSeq = null',
    'SubscriptionClient? subscriptions = null',
    'CancellationToken cancellationToken = default',
  ];
  return [
    summary(
      [
        op.description,
        `subscription ${op.name}: each ${type.shape.typeName} once, in strictly increasing Seq, across reconnects (resumed after the last one handled).`,
        'afterSeq: start after this sequence (0: from the first); null: live only. subscriptions: another SubscriptionClient',
        "(e.g. with its own token provider); default: the client's.",
      ],
      '    ',
    ) +
      `    public IAsyncEnumerable<SubscriptionItem<${event}>> ${op.name}Async(${all.join(', ')})\n    {\n` +
      '        var variables = new JsonObject();\n' +
      (fill.length ? `${fill.join('\n')}\n` : '') +
      `        return (subscriptions ?? Client.CreateSubscriptionClient()).SubscribeAsync<${event}>(AgentGraphOperations.${op.name}, variables, new SubscriptionOptions\n        {\n` +
      '            CursorVariable = "afterSeq",\n            After = afterSeq,\n' +
      '            SeqOf = e => (long)e["seq"]!,\n' +
      `            Select = data => data[${str(root.responseName)}],\n` +
      '        }, AgentGraphJson.Options, cancellationToken);\n    }\n',
  ];
}

export function renderClient(ir: IR): string {
  const ops = ir.operations.filter((op) => op.kind !== 'subscription');
  return [
    HEADER,
    '#nullable enable',
    '#pragma warning disable CS0618 // generated code calls deprecated operations',
    'using System.Runtime.CompilerServices;',
    'using System.Text.Json;',
    'using System.Text.Json.Nodes;',
    'using System.Text.Json.Serialization;',
    'using AgentGraph.Sdk.Subscriptions;',
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
    summary([
      'The AgentGraph API: one method per operation, on the runtime client. Create one per endpoint and share it',
      '(thread-safe), or register it with services.AddAgentGraph(...) to get it from IHttpClientFactory.',
    ]) + 'public sealed class AgentGraphSdk : IDisposable\n{',
    summary(['Creates the SDK (the error registry is filled in).'], '    ') +
      '    public AgentGraphSdk(AgentGraphClientOptions options)\n    {\n' +
      '        ArgumentNullException.ThrowIfNull(options);\n' +
      '        Client = new AgentGraphClient(options with { Errors = options.Errors ?? AgentGraphErrors.Registry });\n    }\n',
    summary(['The runtime client (ExecuteAsync, PaginateAsync, capabilities).'], '    ') +
      '    public AgentGraphClient Client { get; }\n',
    ...ops.flatMap((op) => [method(op), ...pager(op)]),
    ...ir.operations.flatMap(stream),
    summary(
      ['Disposes the HTTP client it made (one passed in options.HttpClient is left to its owner).'],
      '    ',
    ) + '    public void Dispose() => Client.Dispose();',
    '}',
    '',
  ].join('\n');
}
