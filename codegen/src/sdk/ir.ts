/**
 * The intermediate representation every SDK target is generated from: plain data (JSON-serializable), with no
 * graphql-js objects in it, so a target only renders and never re-reads the schema. Built by build-ir.ts from
 * schemas/api.graphql, schemas/operations/*.graphql and schemas/errors.json.
 */

export type DataClass = 'PUBLIC' | 'INTERNAL' | 'PERSONAL' | 'SECRET' | 'BIOMETRIC';

/** Strictest last: when one variable path gets two classes, the later in this list wins. */
export const DATA_CLASS_ORDER: readonly DataClass[] = [
  'PUBLIC',
  'INTERNAL',
  'PERSONAL',
  'SECRET',
  'BIOMETRIC',
];

export type OperationKind = 'query' | 'mutation' | 'subscription';

/** An input position's type: a variable, an argument or an input field. */
export type InputTypeRef =
  | { kind: 'NON_NULL'; ofType: InputTypeRef }
  | { kind: 'LIST'; ofType: InputTypeRef }
  | { kind: 'SCALAR' | 'ENUM' | 'INPUT_OBJECT'; name: string };

/** A selected value's type, with the selection's shape for objects. */
export type OutputTypeRef =
  | { kind: 'NON_NULL'; ofType: OutputTypeRef }
  | { kind: 'LIST'; ofType: OutputTypeRef }
  | { kind: 'SCALAR' | 'ENUM'; name: string }
  /** `__typename`: one of these object type names. */
  | { kind: 'TYPENAME'; names: string[] }
  | { kind: 'OBJECT'; shape: ResultShape };

export interface ResultField {
  /** The key in the response (the alias, else the field name). */
  responseName: string;
  fieldName: string;
  type: OutputTypeRef;
  /** Under @skip/@include (or a conditional fragment): may be absent from the response. */
  optional: boolean;
  description?: string;
  deprecationReason?: string;
}

/**
 * The shape of one selection set. On an object type (or an abstract type selected without type conditions) one
 * field list; on an abstract type with type-conditioned fragments, one variant per possible object type.
 */
export interface ResultShape {
  typeName: string;
  fields: ResultField[];
  variants?: Array<{ typeName: string; fields: ResultField[] }>;
}

export interface PrivacyRule {
  class: DataClass;
  required: boolean;
}

/** Variable path → rule, in the runtime's syntax (`input.body`, `items[].note`), sorted by path. */
export type PrivacyTable = Record<string, PrivacyRule>;

export interface VariableIR {
  name: string;
  type: InputTypeRef;
  /** The type as written in GraphQL, e.g. `[String!]`. */
  typeText: string;
  /** The default value as a GraphQL literal, when the document declares one. */
  defaultValue?: string;
  /** The caller must pass it: non-null and no default. The idempotency key never is (the SDK makes one). */
  required: boolean;
}

/** A Relay connection the SDK can page through: reachable without lists, `after` bound to a variable. */
export interface ConnectionIR {
  /** Response keys from the root to the connection field, e.g. ['tenant', 'devices']. */
  path: string[];
  /** Whether each step of `path` may be null (same length as path). */
  nullable: boolean[];
  afterVariable: string;
  firstVariable?: string;
  nodeTypeName: string;
}

export interface OperationIR {
  name: string;
  kind: OperationKind;
  /** Exactly what the SDK sends as `query`; its SHA-256 is the APQ hash and the manifest entry. */
  document: string;
  /** 'curated' (from schemas/operations/<file>) or 'default' (made for a root field no curated operation uses). */
  origin: { kind: 'curated'; file: string } | { kind: 'default'; field: string };
  /** The curated document's leading comment, else the root field's description. */
  description?: string;
  /** Set when every root field the operation selects is deprecated. */
  deprecationReason?: string;
  rootFields: string[];
  variables: VariableIR[];
  result: ResultShape;
  /** A mutation that takes `$idempotencyKey`: the SDK makes one key per call and may retry it. */
  idempotent: boolean;
  privacy: PrivacyTable;
  connections: ConnectionIR[];
}

export interface EnumIR {
  name: string;
  description?: string;
  values: Array<{ name: string; description?: string; deprecationReason?: string }>;
}

export interface InputFieldIR {
  name: string;
  type: InputTypeRef;
  description?: string;
  privacy?: DataClass;
  /** A GraphQL literal. */
  defaultValue?: string;
  deprecationReason?: string;
}

export interface InputObjectIR {
  name: string;
  description?: string;
  fields: InputFieldIR[];
}

export interface ScalarIR {
  name: string;
  description?: string;
}

export interface ErrorCodeIR {
  code: string;
  http: number;
  /** never | refresh-once | backoff | after (the runtime's RetryClass), kept as written. */
  retry: string;
  description: string;
}

export interface IR {
  /** First 12 hex digits of SHA-256 of schemas/api.graphql, as capabilities.schemaVersion. */
  schemaVersion: string;
  /** Custom scalars used by the operations (built-ins excluded), by name. */
  scalars: ScalarIR[];
  /** Enums used by the operations, by name. */
  enums: EnumIR[];
  /** Input objects reachable from the operations' variables, by name. */
  inputs: InputObjectIR[];
  /** Every operation, by name. */
  operations: OperationIR[];
  /** schemas/errors.json, in its order. */
  errors: ErrorCodeIR[];
}
