/**
 * One LISTEN per channel per database handle, shared by every stream of this process, with notifications routed
 * by key: a payload is parsed once and wakes only the streams it concerns (a device's, a room's, an inbox's), so
 * a notification costs O(its subscribers), not O(all open streams) — what lets one server hold ten thousand idle
 * device streams while intents flow. The LISTEN starts with the first subscriber of a channel and ends with the
 * last (listen and unlisten are serialised per channel); a listener reconnect wakes every subscriber (they
 * re-read, so nothing missed is lost). Each notification or reconnect is stamped once (`moment()`) and every
 * subscriber it wakes gets that stamp, which says which in-flight reads may serve them (shared-read.ts).
 */
import type { Database } from '@agentgraph/runtime';
import { moment } from './shared-read.js';

/** The routing keys a notification payload concerns (e.g. `tenant:room`). */
export type ChannelRouter = (payload: Record<string, unknown>) => readonly string[];

export interface HubSubscriber {
  /** Something this subscriber may care about was committed; `at`: when this process heard of it (`moment()`). */
  poke(at: number): void;
  /** The listener connection came back (at `at`): anything may have been missed. */
  reconnected(at: number): void;
}

/** Parses a JSON notification payload into an object, or null. */
export function parsePayload(payload: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(payload);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

class ChannelHub {
  private readonly subs = new Map<string, Set<HubSubscriber>>();
  private size = 0;
  private unlisten: (() => Promise<void>) | null = null;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Database,
    private readonly channel: string,
    private readonly router: ChannelRouter,
  ) {}

  /** Registers, and resolves once the channel is listened to (unregistered again if that fails). */
  async add(key: string, sub: HubSubscriber): Promise<void> {
    let set = this.subs.get(key);
    if (!set) this.subs.set(key, (set = new Set()));
    set.add(sub);
    this.size++;
    try {
      await this.serial(() => this.ensureListening());
    } catch (err) {
      await this.remove(key, sub).catch(() => undefined);
      throw err;
    }
  }

  /** Unregisters (once: a subscriber not registered is ignored); the last one out ends the LISTEN. */
  async remove(key: string, sub: HubSubscriber): Promise<void> {
    const set = this.subs.get(key);
    if (!set?.delete(sub)) return;
    if (set.size === 0) this.subs.delete(key);
    this.size--;
    await this.serial(() => this.stopIfIdle());
  }

  private serial(fn: () => Promise<void>): Promise<void> {
    const next = this.queue.catch(() => undefined).then(fn);
    this.queue = next;
    return next;
  }

  private async ensureListening(): Promise<void> {
    if (this.unlisten || this.size === 0) return;
    this.unlisten = await this.db.listen(
      this.channel,
      (payload) => this.dispatch(payload),
      () => this.reconnected(),
    );
  }

  private async stopIfIdle(): Promise<void> {
    if (this.size > 0 || !this.unlisten) return;
    const unlisten = this.unlisten;
    this.unlisten = null;
    await unlisten();
  }

  private dispatch(payload: string): void {
    const parsed = parsePayload(payload);
    if (!parsed) return;
    const at = moment();
    for (const key of this.router(parsed)) {
      const set = this.subs.get(key);
      if (set) for (const sub of [...set]) sub.poke(at);
    }
  }

  private reconnected(): void {
    const at = moment();
    for (const set of [...this.subs.values()]) for (const sub of [...set]) sub.reconnected(at);
  }
}

const hubs = new WeakMap<Database, Map<string, ChannelHub>>();

function hubOf(db: Database, channel: string, router: ChannelRouter): ChannelHub {
  let channels = hubs.get(db);
  if (!channels) hubs.set(db, (channels = new Map()));
  let hub = channels.get(channel);
  if (!hub) channels.set(channel, (hub = new ChannelHub(db, channel, router)));
  return hub;
}

/**
 * Subscribes to `channel` notifications routed to `key` on this database handle. `router` must be the same for
 * every subscriber of a channel (the first one's is kept). Resolves once the LISTEN is in place. Nothing is
 * allocated per subscriber but its entry: unsubscribe with the same arguments (`unsubscribeNotifications`).
 */
export function subscribeNotifications(
  db: Database,
  channel: string,
  router: ChannelRouter,
  key: string,
  sub: HubSubscriber,
): Promise<void> {
  return hubOf(db, channel, router).add(key, sub);
}

/** Ends a subscription made with `subscribeNotifications`; a second call (or one never made) does nothing. */
export async function unsubscribeNotifications(
  db: Database,
  channel: string,
  key: string,
  sub: HubSubscriber,
): Promise<void> {
  await hubs.get(db)?.get(channel)?.remove(key, sub);
}
