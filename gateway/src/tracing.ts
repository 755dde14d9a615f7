/**
 * The gateway's part of the traces (runtime/src/telemetry/ makes the spans): its request span learns the operation
 * and its outcome (the first error's code, or OK) from Apollo Server, through this plugin. Nothing runs when tracing
 * is off: no span is remembered, so the plugin returns no listener.
 */
import type { ApolloServerPlugin } from '@apollo/server';
import { trace, type Span } from '@opentelemetry/api';
import { tracingEnabled } from '@agentgraph/runtime';
import type { GatewayContext } from './data-source.js';

/** A symbol-keyed property: Apollo Server copies the context object per operation, and its own properties with it. */
const REQUEST_SPAN = Symbol('requestSpan');
type Traced = GatewayContext & { [REQUEST_SPAN]?: Span };

/** Remembers the active span (the request's SERVER span) on the context Apollo Server will see. */
export function rememberRequestSpan(context: GatewayContext): void {
  if (!tracingEnabled()) return;
  const span = trace.getActiveSpan();
  if (span) (context as Traced)[REQUEST_SPAN] = span;
}

export const tracingPlugin: ApolloServerPlugin<GatewayContext> = {
  async requestDidStart({ contextValue }) {
    const span = (contextValue as Traced)[REQUEST_SPAN];
    if (!span) return;
    return {
      async didResolveOperation({ operationName, operation }) {
        if (operation) span.setAttribute('graphql.operation.type', operation.operation);
        if (operationName) span.setAttribute('graphql.operation.name', operationName);
      },
      async willSendResponse({ response }) {
        const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
        const code = errors?.[0]?.extensions?.['code'];
        span.setAttribute(
          'agentgraph.outcome',
          errors?.length ? (typeof code === 'string' ? code : 'INTERNAL_SERVER_ERROR') : 'OK',
        );
      },
    };
  },
};
