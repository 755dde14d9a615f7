/** SqliteReplayCache: the replay cache in SQLite (Node only), so a restart does not forget seen intents. */
import { migrate, openSqlite, type SqliteDatabase, type SqliteOpenOptions } from '../outbox/sqlite.node.js';
import type { ReplayCache } from './replay-cache.js';

const MIGRATIONS = [
  `CREATE TABLE intent_replay_cache (jti TEXT PRIMARY KEY, keep_until INTEGER NOT NULL);
   CREATE INDEX intent_replay_cache_keep_until ON intent_replay_cache (keep_until);`,
];

export class SqliteReplayCache implements ReplayCache {
  private readonly purgeStatement;
  private readonly insertStatement;

  private constructor(
    private readonly db: SqliteDatabase,
    private readonly owned: boolean,
  ) {
    this.purgeStatement = db.prepare('DELETE FROM intent_replay_cache WHERE keep_until <= ?');
    this.insertStatement = db.prepare(
      'INSERT INTO intent_replay_cache (jti, keep_until) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING',
    );
  }

  /** Opens the cache in a file, or in a Database the caller opened (the inbox's, for one file per device). */
  static open(target: string | SqliteDatabase, options: SqliteOpenOptions = {}): SqliteReplayCache {
    const { db, owned } = openSqlite(target, options);
    migrate(db, 'intent-replay-cache', MIGRATIONS);
    return new SqliteReplayCache(db, owned);
  }

  async remember(jti: string, keepUntil: number, now: number): Promise<boolean> {
    return this.db.transaction(() => {
      this.purgeStatement.run(now);
      return this.insertStatement.run(jti, keepUntil).changes === 1;
    })();
  }

  async close(): Promise<void> {
    if (this.owned && this.db.open) this.db.close();
  }
}
