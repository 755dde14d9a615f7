/**
 * Database spans: each statement (and each transaction around its statements) of a traced request is a CLIENT span,
 * `db.system` postgresql (PGlite is PostgreSQL too; `agentgraph.db.driver` tells them apart), with the statement's text
 * only (parameters are never recorded; the text is cut at MAX_STATEMENT_CHARS). Statements outside a traced request
 * (sweepers, the revocation list) are not traced. Applied to a handle's app connections only when tracing is on.
 */
import { SpanKind } from '@opentelemetry/api';
import type { Database, DatabaseHandle, Queryable, QueryResult } from '../db/types.js';
import { inChildSpan, tracingEnabled } from './tracing.js';

const TRACER = '@agentgraph/runtime/db';
const MAX_STATEMENT_CHARS = 2000;

/** The statement as recorded: whitespace collapsed, cut to MAX_STATEMENT_CHARS. */
export function statementText(sql: string): string {
  const text = sql.replace(/\s+/g, ' ').trim();
  return text.length > MAX_STATEMENT_CHARS ? `${text.slice(0, MAX_STATEMENT_CHARS)}…` : text;
}

/** The span name: the statement's first keyword (SELECT, INSERT, WITH, …). */
function operationOf(text: string): string {
  const m = /^[A-Za-z]+/.exec(text);
  return m ? m[0].toUpperCase() : 'SQL';
}

function tracedQueryable(q: Queryable, driver: Database['driver']): Queryable {
  return {
    query<Row>(sql: string, params?: unknown[]): Promise<QueryResult<Row>> {
      const text = statementText(sql);
      const operation = operationOf(text);
      return inChildSpan(
        TRACER,
        operation,
        SpanKind.CLIENT,
        {
          'db.system': 'postgresql',
          'db.system.name': 'postgresql',
          'db.statement': text,
          'db.query.text': text,
          'db.operation.name': operation,
          'agentgraph.db.driver': driver,
        },
        () => q.query<Row>(sql, params),
      );
    },
  };
}

/** The same connections (every other member forwarded as is), with spans around statements and transactions. */
function tracedDatabase(db: Database): Database {
  const { driver } = db;
  return {
    ...db,
    query: tracedQueryable(db, driver).query,
    transaction: (fn, settings) =>
      inChildSpan(
        TRACER,
        'transaction',
        SpanKind.CLIENT,
        { 'db.system': 'postgresql', 'db.system.name': 'postgresql', 'agentgraph.db.driver': driver },
        (span) => db.transaction((tx) => fn(span ? tracedQueryable(tx, driver) : tx), settings),
      ),
  };
}

/** The handle with its app connections traced when tracing is on (the owner's migrations are not); else as is. */
export function tracedHandle(handle: DatabaseHandle): DatabaseHandle {
  if (!tracingEnabled()) return handle;
  const traced = new Map<Database, Database>();
  return {
    owner: handle.owner,
    async app(service) {
      const db = await handle.app(service);
      let t = traced.get(db);
      if (!t) traced.set(db, (t = tracedDatabase(db)));
      return t;
    },
    close: () => handle.close(),
  };
}
