/**
 * The replay cache: every accepted intent's `jti`, kept until the intent can no longer be valid (exp + skew).
 * `MemoryReplayCache` is for the browser (and tests); on Node use SqliteReplayCache (replay-cache.node.ts), which
 * survives restarts — a replay cache that forgets on restart lets a captured intent run twice.
 */

export interface ReplayCache {
  /**
   * Records `jti` as seen until `keepUntil` (epoch ms) and returns true, or returns false when it is already
   * recorded (a replay). Atomic: two concurrent calls for one jti cannot both get true. Forgets entries whose
   * keepUntil has passed.
   */
  remember(jti: string, keepUntil: number, now: number): Promise<boolean>;
  close?(): Promise<void>;
}

export class MemoryReplayCache implements ReplayCache {
  private readonly seen = new Map<string, number>();

  async remember(jti: string, keepUntil: number, now: number): Promise<boolean> {
    for (const [key, until] of this.seen) if (until <= now) this.seen.delete(key);
    if (this.seen.has(jti)) return false;
    this.seen.set(jti, keepUntil);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }
}
