/**
 * Persisted operations at the gateway, one mode for /graphql and /graphql/stream (`PERSISTED_QUERIES`):
 *
 * - `apq` (default): Apollo's automatic persisted queries, protocol version 1. A request may carry
 *   `extensions.persistedQuery = { version: 1, sha256Hash }` instead of its `query`: the document comes from a bounded
 *   LRU (documents the gateway was sent before) or the operations manifest, else PERSISTED_QUERY_NOT_FOUND (HTTP 200,
 *   as Apollo Server answers) and the client resends with the full `query`. A request with both is checked
 *   (sha256(query) must equal the hash) and the document is remembered once it validated.
 * - `trusted`: only the documents of the operations manifest (schemas/operations.manifest.json, written by
 *   `npm run codegen`) run, sent by hash or in full; anything else is refused with OPERATION_NOT_TRUSTED before any
 *   subgraph is asked.
 * - `off`: the extension is ignored when the `query` is there; a hash alone is never found.
 *
 * The `persistedQuery` extension never reaches Apollo Server (whose own APQ is off): the gateway resolves it first.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ApolloServerPlugin } from '@apollo/server';
import { AppError, ConfigError, type Logger } from '@agentgraph/runtime';
import { z } from 'zod';

export type PersistedMode = 'off' | 'apq' | 'trusted';

const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits (SHA-256)');

/** schemas/operations.manifest.json (gateway README, "Persisted operations"): the operations the generated SDKs send, with their exact text. */
export const OperationsManifestSchema = z.object({
  version: z.literal(1),
  schemaVersion: z.string().regex(/^[0-9a-f]{12}$/, 'must be 12 hex digits (capabilities.schemaVersion)'),
  operations: z.array(
    z.object({
      name: z.string().regex(/^[_A-Za-z][_0-9A-Za-z]*$/, 'must be a GraphQL name'),
      kind: z.enum(['query', 'mutation', 'subscription']),
      sha256: Sha256Hex,
      document: z.string().min(1),
    }),
  ),
});
export type OperationsManifest = z.infer<typeof OperationsManifestSchema>;
export type ManifestOperation = OperationsManifest['operations'][number];

/** The manifest file is missing or wrong (a configuration error); the message names the file and says what to do. */
export class ManifestError extends ConfigError {
  constructor(message: string) {
    super(message);
    this.name = 'ManifestError';
  }
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

const REGENERATE =
  'Run "npm run codegen" to write it (or point TRUSTED_DOCUMENTS_FILE at the generated manifest).';

/** Parses and checks a manifest's text: the shape (zod), each hash against its document, unique names and hashes. */
export function parseOperationsManifest(text: string, file: string): OperationsManifest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ManifestError(
      `The operations manifest ${file} is not valid JSON (${(err as Error).message}). ${REGENERATE}`,
    );
  }
  const parsed = OperationsManifestSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(file)'}: ${i.message}`);
    throw new ManifestError(
      `The operations manifest ${file} is not a version 1 manifest:\n${issues.join('\n')}\n${REGENERATE}`,
    );
  }
  const names = new Set<string>();
  const hashes = new Set<string>();
  for (const [i, op] of parsed.data.operations.entries()) {
    const where = `operations.${i} (${op.name})`;
    if (sha256Hex(op.document) !== op.sha256) {
      throw new ManifestError(
        `The operations manifest ${file}: ${where} has a sha256 that is not the SHA-256 of its document. ${REGENERATE}`,
      );
    }
    if (names.has(op.name))
      throw new ManifestError(`The operations manifest ${file}: ${where} repeats the name. ${REGENERATE}`);
    if (hashes.has(op.sha256))
      throw new ManifestError(`The operations manifest ${file}: ${where} repeats a document. ${REGENERATE}`);
    names.add(op.name);
    hashes.add(op.sha256);
  }
  return parsed.data;
}

/** Reads the manifest; `null` when the file does not exist and `required` is false. */
export function loadOperationsManifest(file: string, required: boolean): OperationsManifest | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !required) return null;
    throw new ManifestError(
      `The operations manifest ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); ` +
        `PERSISTED_QUERIES=trusted needs it. ${REGENERATE}`,
    );
  }
  return parseOperationsManifest(text, file);
}

/**
 * Documents remembered from APQ registrations: least recently used first out, bounded by their total size in bytes
 * (a document may be as large as the body limit) and by count.
 */
export class DocumentCache {
  private readonly map = new Map<string, { document: string; bytes: number }>();
  private total = 0;
  constructor(
    private readonly maxBytes: number,
    private readonly maxEntries = 10_000,
  ) {}
  get size(): number {
    return this.map.size;
  }
  get bytes(): number {
    return this.total;
  }
  /** Looks up without refreshing the entry's recency. */
  peek(hash: string): string | undefined {
    return this.map.get(hash)?.document;
  }
  get(hash: string): string | undefined {
    const entry = this.map.get(hash);
    if (!entry) return undefined;
    this.map.delete(hash);
    this.map.set(hash, entry);
    return entry.document;
  }
  set(hash: string, document: string): void {
    const bytes = Buffer.byteLength(document, 'utf8');
    if (bytes > this.maxBytes) return;
    this.delete(hash);
    this.map.set(hash, { document, bytes });
    this.total += bytes;
    while (this.total > this.maxBytes || this.map.size > this.maxEntries) {
      this.delete(this.map.keys().next().value as string);
    }
  }
  private delete(hash: string): void {
    const entry = this.map.get(hash);
    if (!entry) return;
    this.map.delete(hash);
    this.total -= entry.bytes;
  }
}

const PersistedQueryExtension = z.object({
  version: z.number(),
  sha256Hash: z.string(),
});

/** What a request says about its document: the `query` (if a string), `extensions` (anything) and `operationName`. */
export interface DocumentRequest {
  query: string | undefined;
  extensions: unknown;
  operationName: string | undefined;
}

export interface ResolvedDocument {
  /** The document to run. */
  query: string;
  /** The request carried `extensions.persistedQuery` (strip it before Apollo Server sees the request). */
  persisted: boolean;
  /** APQ registration: the hash to remember `query` under once the document validated. */
  register?: string;
}

export interface PersistedOptions {
  mode: PersistedMode;
  /** The loaded manifest (required in `trusted` mode; in `apq` mode its documents are found by hash too). */
  manifest: OperationsManifest | null;
  /** Budget of the APQ document cache in bytes (default 16 MiB). */
  cacheBytes?: number;
}

const PENDING = Symbol('agentgraph.persisted.pending');
type PendingContext = { [PENDING]?: { hash: string; query: string } };

function operationNameOf(query: string): string | undefined {
  return /\b(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)/.exec(query.slice(0, 4096))?.[1];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The request's extensions without `persistedQuery` (undefined when nothing else is left). */
export function withoutPersistedQuery(extensions: unknown): Record<string, unknown> | undefined {
  if (!isObject(extensions)) return undefined;
  const { persistedQuery: _persisted, ...rest } = extensions;
  return Object.keys(rest).length ? rest : undefined;
}

/** Resolves each request's document according to the mode; see the file comment. */
export class PersistedDocuments {
  readonly mode: PersistedMode;
  readonly cache: DocumentCache;
  private readonly byHash = new Map<string, ManifestOperation>();
  private readonly byText = new Map<string, ManifestOperation>();
  /** The manifest's operation names: the only names the metrics label requests with (any mode). */
  readonly operationNames: ReadonlySet<string>;

  constructor(opts: PersistedOptions) {
    this.mode = opts.mode;
    this.operationNames = new Set((opts.manifest?.operations ?? []).map((op) => op.name));
    this.cache = new DocumentCache(opts.cacheBytes ?? 16 * 1024 * 1024);
    if (opts.mode === 'trusted' && !opts.manifest)
      throw new ManifestError('PERSISTED_QUERIES=trusted needs the operations manifest; none was loaded.');
    if (opts.mode !== 'off') {
      for (const op of opts.manifest?.operations ?? []) {
        this.byHash.set(op.sha256, op);
        this.byText.set(op.document, op);
      }
    }
  }

  /** Number of manifest operations in use. */
  get trustedCount(): number {
    return this.byHash.size;
  }

  /**
   * The document a request runs, or an AppError: BAD_USER_INPUT (no document, a malformed extension, a hash that
   * does not match the query), PERSISTED_QUERY_NOT_FOUND, OPERATION_NOT_TRUSTED.
   */
  resolve(req: DocumentRequest): ResolvedDocument {
    const { query } = req;
    const extension = isObject(req.extensions) ? req.extensions['persistedQuery'] : undefined;
    if (extension === undefined) {
      if (query === undefined || query === '') {
        throw new AppError(
          'BAD_USER_INPUT',
          'The request has no "query" string (nor an extensions.persistedQuery with a sha256Hash).',
        );
      }
      if (this.mode === 'trusted' && !this.byText.has(query))
        throw this.notTrusted(req.operationName ?? operationNameOf(query));
      return { query, persisted: false };
    }
    const hash = this.hashOf(extension);
    if (this.mode === 'off') {
      if (query === undefined) throw notFound();
      return { query, persisted: true };
    }
    const trusted = this.byHash.get(hash);
    if (this.mode === 'trusted') {
      if (!trusted) {
        throw this.notTrusted(
          req.operationName ?? (query === undefined ? undefined : operationNameOf(query)),
          hash,
        );
      }
      if (query !== undefined && query !== trusted.document) throw mismatch();
      return { query: trusted.document, persisted: true };
    }
    if (query === undefined) {
      const document = trusted?.document ?? this.cache.get(hash);
      if (document === undefined) throw notFound();
      return { query: document, persisted: true };
    }
    // Already known under this hash: nothing to check or remember.
    if (trusted?.document === query || this.cache.peek(hash) === query) return { query, persisted: true };
    if (sha256Hex(query) !== hash) throw mismatch();
    return { query, persisted: true, register: hash };
  }

  /** Remembers an APQ document (checking its hash again, so only a matching pair is ever stored). */
  remember(hash: string, query: string): void {
    if (this.mode !== 'apq' || this.cache.peek(hash) === query) return;
    if (sha256Hex(query) === hash) this.cache.set(hash, query);
  }

  /** A stream's document was accepted: remembers it under the hash its request carried (APQ registration). */
  rememberFromExtensions(extensions: unknown, query: string): void {
    if (this.mode !== 'apq' || !isObject(extensions)) return;
    const extension = extensions['persistedQuery'];
    if (isObject(extension) && typeof extension['sha256Hash'] === 'string')
      this.remember(extension['sha256Hash'].toLowerCase(), query);
  }

  /**
   * Marks a request context whose document is remembered once Apollo Server resolved its operation. A property, not a
   * WeakMap entry: Apollo Server hands plugins a shallow copy of the context.
   */
  rememberAfterValidation(context: object, hash: string, query: string): void {
    (context as PendingContext)[PENDING] = { hash, query };
  }

  /**
   * An Apollo Server plugin that remembers a registered document only after it parsed and validated (Apollo Server's
   * own APQ stores it at the same point), so documents that fail never fill the cache.
   */
  plugin<TContext extends object>(): ApolloServerPlugin<TContext> {
    return {
      requestDidStart: async ({ contextValue }) => {
        const pending = (contextValue as PendingContext)[PENDING];
        if (!pending) return;
        return {
          didResolveOperation: async () => {
            this.remember(pending.hash, pending.query);
          },
        };
      },
    };
  }

  private hashOf(extension: unknown): string {
    const parsed = PersistedQueryExtension.safeParse(extension);
    if (!parsed.success) {
      throw new AppError(
        'BAD_USER_INPUT',
        'extensions.persistedQuery must be {"version": 1, "sha256Hash": "<64 hex digits>"}.',
      );
    }
    if (parsed.data.version !== 1) {
      throw new AppError(
        'BAD_USER_INPUT',
        `Unsupported persisted query version ${parsed.data.version}; this gateway speaks version 1.`,
      );
    }
    const hash = parsed.data.sha256Hash.toLowerCase();
    if (!Sha256Hex.safeParse(hash).success) {
      throw new AppError(
        'BAD_USER_INPUT',
        'extensions.persistedQuery.sha256Hash must be the SHA-256 of the query text in hex (64 digits).',
      );
    }
    return hash;
  }

  private notTrusted(operationName: string | undefined, hash?: string): AppError {
    const what = operationName ? `Operation "${operationName}"` : 'This anonymous operation';
    return new AppError(
      'OPERATION_NOT_TRUSTED',
      `${what} is not a trusted document of this gateway, which runs only the operations of its operations ` +
        'manifest (schemas/operations.manifest.json). Send it with the generated SDK (regenerate the SDK with ' +
        '"npm run codegen" if it is older than the server), or add the operation to schemas/operations/, run ' +
        '"npm run codegen" and deploy the new manifest.',
      { ...(operationName ? { operationName } : {}), ...(hash ? { sha256Hash: hash } : {}) },
    );
  }
}

/**
 * /graphql/stream: resolves the document of a graphql-sse request (the POST body's text, or the GET URL) before
 * graphql-sse reads it; the POST body comes back parsed (graphql-sse accepts an object), the GET URL rebuilt with
 * `query` set, so graphql-sse runs exactly the document that was checked.
 * A POST body that does not parse is left as it is (graphql-sse parses the same text, refuses it, and nothing runs).
 */
export function resolveStreamRequest(
  persisted: PersistedDocuments,
  method: string | undefined,
  body: string | null,
  url: string,
): { body: string | Record<string, unknown> | null; url: string } {
  if (method === 'POST' && body !== null) {
    let data: unknown;
    try {
      data = JSON.parse(body);
    } catch {
      return { body, url };
    }
    if (!isObject(data)) return { body, url };
    const resolved = persisted.resolve({
      query: typeof data['query'] === 'string' ? data['query'] : undefined,
      extensions: data['extensions'],
      operationName: typeof data['operationName'] === 'string' ? data['operationName'] : undefined,
    });
    return { body: { ...data, query: resolved.query }, url };
  }
  if (method === 'GET') {
    const q = url.indexOf('?');
    const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
    let extensions: unknown;
    try {
      const e = params.get('extensions');
      extensions = e ? JSON.parse(e) : undefined;
    } catch {
      // Refused here: graphql-sse, reading the search only up to a second "?", might parse a shorter text.
      throw new AppError('GRAPHQL_PARSE_FAILED', 'The "extensions" search parameter is not valid JSON.');
    }
    const resolved = persisted.resolve({
      query: params.get('query') ?? undefined,
      extensions,
      operationName: params.get('operationName') ?? undefined,
    });
    // Always a URL rebuilt from what was checked: graphql-sse cuts the search at a second raw "?"; URLSearchParams
    // does not, and encodes one.
    params.set('query', resolved.query);
    return { body, url: `${q < 0 ? url : url.slice(0, q)}?${params.toString()}` };
  }
  return { body, url };
}

function notFound(): AppError {
  // The message is the protocol's: Apollo Client matches the code, urql and others the exact message.
  return new AppError('PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound');
}

function mismatch(): AppError {
  return new AppError(
    'BAD_USER_INPUT',
    'provided sha does not match query: extensions.persistedQuery.sha256Hash must be the SHA-256 (hex) of the ' +
      'exact "query" text sent.',
  );
}

/**
 * Builds the gateway's persisted-operations state from the configuration. `trusted` cannot run without a valid
 * manifest: a missing or invalid one throws ManifestError (the gateway does not start). In `apq` mode the manifest
 * only saves first registrations: a missing one is fine, an invalid one is logged as an error and ignored.
 */
export function createPersistedDocuments(
  config: { mode: PersistedMode; manifestFile: string; cacheBytes: number },
  log?: Logger,
): PersistedDocuments {
  let manifest: OperationsManifest | null = null;
  if (config.mode === 'trusted') manifest = loadOperationsManifest(config.manifestFile, true);
  else if (config.mode === 'apq') {
    try {
      manifest = loadOperationsManifest(config.manifestFile, false);
    } catch (err) {
      if (!(err instanceof ManifestError)) throw err;
      log?.error('operations manifest ignored', { error: err.message });
    }
  }
  const persisted = new PersistedDocuments({
    mode: config.mode,
    manifest,
    cacheBytes: config.cacheBytes,
  });
  log?.info('persisted operations', {
    mode: config.mode,
    manifest: manifest ? config.manifestFile : null,
    operations: persisted.trustedCount,
  });
  return persisted;
}
