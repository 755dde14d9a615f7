/**
 * Who is calling, beyond the role: a PERSON (a member's own token: no `did`), a DEVICE (the desktop host's token from
 * the device authorization grant: `did`, no `act`) or a SIDECAR (a token obtained by RFC 8693 token exchange: `act`,
 * and the device's `did`). Device and sidecar tokens carry the approving member's role, so roles alone would let a
 * device do whatever its owner may. Each subgraph therefore declares the root fields a device and a sidecar may call
 * (`SubgraphModule.principals`); the subgraph server refuses every other root field for them with FORBIDDEN before any
 * resolver runs, next to the scope check (default deny). A person's token is governed by roles in the resolvers, and
 * fields a device may call are confined to its own objects there (its intents, its inbox, its switch).
 */
import {
  Kind,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { AppError } from './errors.js';
import type { AuthContext } from './tenancy.js';

export const PRINCIPAL_KINDS = ['PERSON', 'DEVICE', 'SIDECAR'] as const;
export type PrincipalKind = (typeof PRINCIPAL_KINDS)[number];

/** A root field as `Query.viewer`, `Mutation.reportIntentState`, `Subscription.deviceIntents`. */
export type RootField = `${'Query' | 'Mutation' | 'Subscription'}.${string}`;

/** The root fields of one subgraph that a device's and a sidecar's token may call; anything unlisted is refused. */
export interface PrincipalOperations {
  DEVICE: readonly RootField[];
  SIDECAR: readonly RootField[];
}

/** No device or sidecar operations at all (a subgraph with nothing for them). */
export const PERSONS_ONLY: PrincipalOperations = { DEVICE: [], SIDECAR: [] };

/**
 * Federation's own root fields (the gateway's schema loading and entity fetches) and introspection: any caller. What
 * `_entities` resolves is each type's `__resolveReference`, which applies the same tenant and device rules as the
 * root fields.
 */
function alwaysAllowed(field: string): boolean {
  return field === '_entities' || field === '_service' || field.startsWith('__');
}

export function principalKindOf(auth: AuthContext): PrincipalKind {
  if (auth.actor !== undefined) return 'SIDECAR';
  if (auth.deviceId !== undefined) return 'DEVICE';
  return 'PERSON';
}

const ROOT_TYPE = { query: 'Query', mutation: 'Mutation', subscription: 'Subscription' } as const;

/** The root fields an operation selects, through inline fragments and fragment spreads (directives ignored: all count). */
export function rootFieldsOf(document: DocumentNode, operation: OperationDefinitionNode): RootField[] {
  const fragments = new Map<string, SelectionSetNode>();
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d.selectionSet);
  }
  const type = ROOT_TYPE[operation.operation];
  const fields = new Set<RootField>();
  const spread = new Set<string>();
  const walk = (set: SelectionSetNode) => {
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) fields.add(`${type}.${s.name.value}`);
      else if (s.kind === Kind.INLINE_FRAGMENT) walk(s.selectionSet);
      else if (!spread.has(s.name.value)) {
        spread.add(s.name.value);
        const f = fragments.get(s.name.value);
        if (f) walk(f);
      }
    }
  };
  walk(operation.selectionSet);
  return [...fields];
}

function refusal(kind: PrincipalKind, field: RootField): AppError {
  const what =
    kind === 'SIDECAR'
      ? `A token obtained by token exchange (the sidecar's) cannot call ${field}: it may call only what the sidecar does ` +
        '(its memory records, room posts and agent messages, reads).'
      : `A device's own access token cannot call ${field}: it may call only what a device does ` +
        '(its intent stream and reports, its remote-actions switch, its room posts and agent messages, reads).';
  return new AppError('FORBIDDEN', `${what} Call it with a member's own token (sign in on the console).`, {
    principalKind: kind,
    field,
  });
}

export type PrincipalCheck = (
  auth: AuthContext | null,
  document: DocumentNode,
  operation: OperationDefinitionNode,
) => void;

/**
 * The check a subgraph server runs before any resolver: refuses (FORBIDDEN, `extensions.principalKind` and `field`)
 * a device's or sidecar's operation that selects a root field its table does not list. Anonymous callers and persons
 * pass (resolvers decide). Throws at creation when the table names a field the schema does not have (a typo would
 * otherwise silently refuse a device what it needs).
 */
export function createPrincipalCheck(
  schema: GraphQLSchema,
  operations: PrincipalOperations = PERSONS_ONLY,
): PrincipalCheck {
  const allowed = {} as Record<Exclude<PrincipalKind, 'PERSON'>, ReadonlySet<string>>;
  for (const kind of ['DEVICE', 'SIDECAR'] as const) {
    for (const entry of operations[kind]) {
      const [type, field, ...rest] = entry.split('.');
      const root =
        type === 'Query'
          ? schema.getQueryType()
          : type === 'Mutation'
            ? schema.getMutationType()
            : type === 'Subscription'
              ? schema.getSubscriptionType()
              : null;
      if (!root || rest.length || !field || !root.getFields()[field]) {
        throw new Error(`principal table: ${kind} lists ${entry}, which is not a root field of this schema`);
      }
    }
    allowed[kind] = new Set(operations[kind]);
  }
  return (auth, document, operation) => {
    if (!auth) return;
    const kind = principalKindOf(auth);
    if (kind === 'PERSON') return;
    for (const field of rootFieldsOf(document, operation)) {
      if (alwaysAllowed(field.slice(field.indexOf('.') + 1))) continue;
      if (!allowed[kind].has(field)) throw refusal(kind, field);
    }
  };
}

/** For HTTP routes outside GraphQL (e.g. a package upload): FORBIDDEN unless the token is a person's own. */
export function requirePersonToken(auth: AuthContext, action: string): AuthContext {
  const kind = principalKindOf(auth);
  if (kind === 'PERSON') return auth;
  const whose = kind === 'SIDECAR' ? 'A token obtained by token exchange' : "A device's own access token";
  throw new AppError(
    'FORBIDDEN',
    `${whose} cannot ${action}; only a member's own token can. Sign in on the console and retry with that token.`,
    { principalKind: kind },
  );
}
