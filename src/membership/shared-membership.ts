/**
 * Membership shared by the replicas through the PostgreSQL they already use for decisions: every
 * change and the newest heartbeat of each endpoint are written there (batched every FLUSH_MS, so
 * heartbeats cost one statement per interval, not one per endpoint), and every replica reads the
 * table every POLL_MS and merges it. Each replica then derives the same states from the same
 * entries and heartbeat times, whichever replica a VM talks to.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { Logger } from 'pino';
import { projectPath } from '../shared/paths.ts';
import type { StoredRegistration } from '../store/registrations.ts';
import type { Membership, MembershipObserver } from './membership.ts';

const FLUSH_MS = 500;
const POLL_MS = 1000;

export class SharedMembership implements MembershipObserver {
  private client?: pg.Client;
  private readonly pending = new Map<string, StoredRegistration>();
  private readonly removals = new Map<string, { service: string; address: string }>();
  private timers: NodeJS.Timeout[] = [];
  /** The write under way, resolving to whether it reached the store. */
  private writing?: Promise<boolean>;

  constructor(
    private readonly url: string,
    private readonly membership: Membership,
    private readonly log: Logger,
    private readonly queryTimeoutMs = 5000,
  ) {}

  async start(): Promise<void> {
    await this.connect().catch((err: Error) => this.log.warn({ err: err.message }, 'shared membership unreachable'));
    this.timers.push(
      setInterval(() => void this.cycle(), FLUSH_MS),
      setInterval(() => void this.read(), POLL_MS),
    );
    for (const t of this.timers) t.unref();
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await this.flush();
    await this.client?.end().catch(() => undefined);
  }

  /**
   * Writes what is pending now, after a write under way: whether it reached the store (a drain is
   * answered once the other replicas can read it). What fails stays pending for the next flush.
   */
  async flush(): Promise<boolean> {
    while (this.writing) await this.writing;
    return this.cycle();
  }

  changed(e: StoredRegistration): void {
    const k = `${e.service}\u0000${e.address}`;
    this.removals.delete(k);
    this.pending.set(k, e);
  }

  seen(e: StoredRegistration): void {
    const k = `${e.service}\u0000${e.address}`;
    const p = this.pending.get(k);
    this.pending.set(k, p ? { ...p, lastSeen: e.lastSeen } : e);
  }

  removed(service: string, address: string): void {
    const k = `${service}\u0000${address}`;
    this.pending.delete(k);
    this.removals.set(k, { service, address });
  }

  private async connect(): Promise<pg.Client> {
    if (this.client) return this.client;
    const c = new pg.Client({ connectionString: this.url, query_timeout: this.queryTimeoutMs });
    c.on('error', (err) => {
      this.log.warn({ err: err.message }, 'shared membership connection lost');
      if (this.client === c) this.client = undefined;
    });
    await c.connect();
    await c.query(readFileSync(projectPath('migrations/postgres/registrations.sql'), 'utf8'));
    this.client = c;
    return c;
  }

  /** Writes what changed since the last flush (unless a write is under way): one upsert, one delete. */
  private cycle(): Promise<boolean> {
    if (this.writing) return this.writing;
    if (!this.pending.size && !this.removals.size) return Promise.resolve(true);
    this.writing = this.write().finally(() => (this.writing = undefined));
    return this.writing;
  }

  private async write(): Promise<boolean> {
    const entries = [...this.pending.values()];
    const removals = [...this.removals.values()];
    this.pending.clear();
    this.removals.clear();
    try {
      const c = await this.connect();
      if (entries.length)
        // A heartbeat only moves last_seen forward; a change replaces the entry when it is newer.
        await c.query(
          `INSERT INTO fleetxds_registrations (service, address, entry, last_seen, updated_at)
           SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::bigint[], $5::bigint[])
           ON CONFLICT (service, address) DO UPDATE SET
             last_seen = GREATEST(fleetxds_registrations.last_seen, excluded.last_seen),
             entry = CASE WHEN excluded.updated_at > fleetxds_registrations.updated_at
                          THEN excluded.entry ELSE fleetxds_registrations.entry END,
             updated_at = GREATEST(fleetxds_registrations.updated_at, excluded.updated_at)`,
          [
            entries.map((e) => e.service),
            entries.map((e) => e.address),
            entries.map((e) => JSON.stringify(e)),
            entries.map((e) => e.lastSeen),
            entries.map((e) => e.updatedAt ?? 0),
          ],
        );
      if (removals.length)
        await c.query(
          'DELETE FROM fleetxds_registrations ' +
            'WHERE (service, address) IN (SELECT * FROM unnest($1::text[], $2::text[]))',
          [removals.map((r) => r.service), removals.map((r) => r.address)],
        );
      return true;
    } catch (err) {
      // Kept for the next flush: nothing is lost while the store is away.
      for (const e of entries) if (!this.pending.has(`${e.service}\u0000${e.address}`)) this.seen(e);
      for (const r of removals) this.removed(r.service, r.address);
      this.log.warn({ err: (err as Error).message }, 'shared membership write failed; retrying');
      return false;
    }
  }

  private async read(): Promise<void> {
    try {
      const c = await this.connect();
      const { rows } = await c.query<{ entry: StoredRegistration; last_seen: string; updated_at: string }>(
        'SELECT entry, last_seen, updated_at FROM fleetxds_registrations',
      );
      this.membership.merge(
        rows.map((r) => ({ ...r.entry, lastSeen: Number(r.last_seen), updatedAt: Number(r.updated_at) })),
        3 * FLUSH_MS,
      );
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'shared membership read failed');
    }
  }
}
