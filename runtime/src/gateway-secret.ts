/**
 * The gateway's proof to a subgraph that a request comes from it: the shared secret GATEWAY_SECRET (config.ts), sent
 * as the `x-agentgraph-gateway` header on every request and stream operation the gateway makes to a subgraph. The
 * federation fields `_service` (the subgraph's whole SDL, introspection by another name) and `_entities` (any entity
 * by key, with no field of the API schema in between) are for the gateway's query planning: a subgraph answers a
 * document that selects either of them anywhere (fragments and aliases included) only with the header, and refuses
 * it with FORBIDDEN otherwise. Tokens are verified as always: the header adds to them, it replaces nothing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { BREAK, visit, type DocumentNode } from 'graphql';
import { AppError } from './errors.js';

export const GATEWAY_SECRET_HEADER = 'x-agentgraph-gateway';

/** Root fields a subgraph answers to the gateway only. */
export const GATEWAY_ONLY_FIELDS: ReadonlySet<string> = new Set(['_service', '_entities']);

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Whether the header holds the secret, compared in constant time (over digests: the length leaks nothing either). */
export function isGatewayRequest(header: string | string[] | undefined, secret: string): boolean {
  return typeof header === 'string' && timingSafeEqual(digest(header), digest(secret));
}

const verdicts = new WeakMap<DocumentNode, boolean>();

/** Whether the document selects `_service` or `_entities` anywhere (by field name, so aliases do not hide them). */
export function selectsGatewayOnlyFields(document: DocumentNode): boolean {
  let found = verdicts.get(document);
  if (found === undefined) {
    found = false;
    visit(document, {
      Field(node) {
        if (!GATEWAY_ONLY_FIELDS.has(node.name.value)) return undefined;
        found = true;
        return BREAK;
      },
    });
    verdicts.set(document, found);
  }
  return found;
}

/** Throws FORBIDDEN when the document selects a gateway-only field and the request is not the gateway's. */
export function assertGatewayAccess(document: DocumentNode, fromGateway: boolean): void {
  if (!fromGateway && selectsGatewayOnlyFields(document)) {
    throw new AppError(
      'FORBIDDEN',
      '_service and _entities are answered to the gateway only. Send the request to the gateway instead.',
    );
  }
}
