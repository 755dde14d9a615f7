/**
 * The inbox stream of one recipient: `sequencedStream` over the inbox's gap-free seqs (listen first, backlog,
 * live, dedupe by seq), yielding only messages still open when read. Acknowledged, failed and expired messages
 * are read as bare seqs (the sequence stays whole, so the no-gap check holds) and skipped: a reconnect after a
 * cut redelivers exactly what the recipient has not finished with.
 */
import type { AuthContext, Database, Logger } from '@agentgraph/runtime';
import type { ChannelRouter } from '../notification-hub.js';
import { sequencedStream } from '../seq-stream.js';
import { kindToDb, type AgentAddressModel, type AgentMessageModel } from './models.js';
import { AGENT_MESSAGES_CHANNEL, inboxAfter } from './store.js';

export interface InboxStreamOptions {
  db: Database;
  auth: AuthContext;
  log: Logger;
  signal: AbortSignal;
  inbox: AgentAddressModel;
  /** Yield messages with seq greater than this. */
  afterSeq: number;
  now: () => Date;
}

/** Agent message notifications: a new message (SENT) goes to the streams of its recipient's inbox. */
const inboxRouter: ChannelRouter = (n) =>
  n['event'] === 'SENT' ? [`${String(n['tenantId'])}:${String(n['kind'])}:${String(n['recipientId'])}`] : [];

export async function* inboxStream(
  opts: InboxStreamOptions,
): AsyncGenerator<AgentMessageModel, void, undefined> {
  const { inbox, auth } = opts;
  const kind = kindToDb(inbox.kind);
  const items = sequencedStream({
    db: opts.db,
    auth,
    log: opts.log,
    signal: opts.signal,
    channel: AGENT_MESSAGES_CHANNEL,
    router: inboxRouter,
    routeKey: `${auth.tenantId}:${kind}:${inbox.id}`,
    read: (tx, after, limit) => inboxAfter(tx, inbox, after, limit, opts.now()),
    seqOf: (item) => item.seq,
    afterSeq: opts.afterSeq,
    logFields: { inboxKind: kind, inboxId: inbox.id },
  });
  for await (const item of items) {
    if (item.message) yield item.message;
  }
}
