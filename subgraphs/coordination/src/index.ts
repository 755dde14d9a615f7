/**
 * The coordination subgraph: rooms and their message logs, and signed command intents for devices, with their
 * live streams (schemas/coordination.graphql). Served in-process by `npm start` or alone by src/main.ts.
 */
import { keyVault, schemaFileOf, sendJson, type SubgraphModule } from '@agentgraph/runtime';
import { createEmergencyResolvers } from './emergency/resolvers.js';
import { createEmergencyWatch } from './emergency/watch.js';
import { createDeviceDirectory } from './intents/device-directory.js';
import {
  INTENT_JWKS_PATH,
  ensureIntentKeys,
  publishedIntentJwks,
  rotateIntentKey,
  sealStoredIntentKeys,
} from './intents/keys.js';
import { createIntentResolvers } from './intents/resolvers.js';
import { startIntentSweeper } from './intents/sweeper.js';
import { coordinationMigrations } from './migrations.js';
import { coordinationPrincipals } from './principals.js';
import { resolvers as roomResolvers } from './resolvers.js';

export interface CoordinationOptions {
  /** The clock of intents (creation, expiry, reports, the sweeper). Default: the system clock. */
  now?: () => Date;
  /** Used to ask identity about devices. Default: globalThis.fetch. */
  fetch?: typeof fetch;
  /** How often the background sweeper runs (ms, default 1000); 0 turns it off (tests sweep by hand). */
  sweepIntervalMs?: number;
  /** Age at which the active intent key is replaced by the pending one (seconds, default 30 days). */
  keyRotationSeconds?: number;
  /** How often each server re-reads the emergency stops without a notification (ms, default 5000). */
  emergencyRefreshMs?: number;
}

/** How often the key maintenance looks at the keys. */
const KEY_CHECK_MS = 60 * 60_000;

export function createCoordinationSubgraph(opts: CoordinationOptions = {}): SubgraphModule {
  const now = opts.now ?? (() => new Date());
  const intents = createIntentResolvers({
    now,
    devices: createDeviceDirectory({ fetch: opts.fetch, now: () => now().getTime() }),
  });
  const emergency = createEmergencyResolvers({ now });
  return {
    name: 'coordination',
    schemaFile: schemaFileOf('coordination'),
    resolvers: {
      ...roomResolvers,
      ...intents,
      ...emergency,
      Query: { ...roomResolvers.Query, ...intents.Query, ...emergency.Query },
      Mutation: { ...roomResolvers.Mutation, ...intents.Mutation, ...emergency.Mutation },
      Subscription: { ...roomResolvers.Subscription, ...intents.Subscription },
    },
    migrations: coordinationMigrations,
    principals: coordinationPrincipals,
    // The outboxes' backlog on each scrape of /metrics (migration 008: one statement over every tenant).
    watchMetrics: ({ db, metrics }) =>
      metrics.watchOutboxes(async () => {
        const r = await db.query<{ outbox: string; pending: string | number; oldest_seconds: number }>(
          'SELECT outbox, pending, oldest_seconds FROM coordination.outbox_stats()',
        );
        return r.rows.map((row) => ({
          outbox: row.outbox,
          pending: Number(row.pending),
          oldestSeconds: Number(row.oldest_seconds),
        }));
      }),
    routes: ({ db }) => ({
      // Desktops fetch the intent keys from coordination's origin (the gateway does not proxy this path).
      [INTENT_JWKS_PATH]: async (req, res) => {
        if (req.method !== 'GET' && req.method !== 'HEAD') {
          res.writeHead(405, { allow: 'GET, HEAD' }).end();
          return;
        }
        sendJson(
          res,
          200,
          await publishedIntentJwks(db),
          { 'cache-control': 'public, max-age=300' },
          'application/jwk-set+json',
        );
      },
    }),
    // The emergency stop ends this server's open streams of a stopped tenant (or all, for the global stop).
    streamStop: ({ db, log }) => createEmergencyWatch({ db, log, refreshMs: opts.emergencyRefreshMs }),
    background: ({ config, db, log, metrics }) => {
      const stopSweeper =
        opts.sweepIntervalMs === 0
          ? async () => undefined
          : startIntentSweeper({ db, log, now, intervalMs: opts.sweepIntervalMs, metrics });
      // Keys: make sure an active and a pending key exist, then rotate when the active one is old enough.
      const rotateAfter = opts.keyRotationSeconds ?? 30 * 24 * 3600;
      // Stored private halves not sealed under the active key-encryption key (from before encryption, or an older
      // KEK) are sealed first.
      const vault = keyVault(config);
      let keys: Promise<unknown> = sealStoredIntentKeys(db, vault)
        .then((sealed) => {
          if (sealed > 0)
            log.info('stored intent keys sealed with the active key-encryption key', { sealed });
          return ensureIntentKeys(db, vault);
        })
        .catch((error: unknown) => log.error('intent keys could not be created', { error }));
      const timer = setInterval(() => {
        keys = rotateIntentKey(db, vault, rotateAfter).catch((error: unknown) =>
          log.error('intent key rotation failed', { error }),
        );
      }, KEY_CHECK_MS).unref();
      return async () => {
        clearInterval(timer);
        await keys;
        await stopSweeper();
      };
    },
  };
}

export const coordinationSubgraph: SubgraphModule = createCoordinationSubgraph();

export { MESSAGES_CHANNEL, type MessageNotification } from './store.js';
export type { MessageModel, RoomModel } from './models.js';
export { INTENTS_CHANNEL, type IntentNotification } from './intents/store.js';
export type { IntentEventModel, IntentModel } from './intents/models.js';
export {
  INTENT_JWKS_PATH,
  ensureIntentKeys,
  publishedIntentJwks,
  rotateIntentKey,
  sealStoredIntentKeys,
} from './intents/keys.js';
export { INTENT_TYP, REPORT_TYP, intentIssuer } from './intents/jws.js';
export { TRANSITIONS, checkTransition, type IntentState } from './intents/machine.js';
export { purgeIntentBookkeeping, sweepIntents, type SweepResult } from './intents/sweeper.js';
export { EMERGENCY_CHANNEL, createEmergencyWatch } from './emergency/watch.js';
export { engageStop, liftStop } from './emergency/store.js';
export { coordinationMigrations } from './migrations.js';
export { runOperatorCli } from './operator-cli.js';
export { takeRateToken } from './limits/rate-limiter.js';
