/**
 * The shared decision log in PostgreSQL: an append-only table of decisions in sequence order,
 * with a NOTIFY on every append so replicas apply it within a round trip, and a poll as the
 * backstop (a notification is lost while a replica is disconnected; it catches up from the
 * sequence number it applied last). PostgreSQL orders, stores and replicates the decisions; this
 * module only appends and reads.
 *
 * One connection per replica. When it fails the replica keeps serving what it serves and retries
 * with backoff; an append while disconnected fails with FXDS_SHARED_UNAVAILABLE (a decision that
 * reached one replica only would split the fleet).
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { Logger } from 'pino';
import { ErrorCodes, FleetError } from '../shared/errors.ts';
import { projectPath } from '../shared/paths.ts';
import { parseDecision, type Decision, type LoggedDecision, type SharedLogStatus } from './decision.ts';

const CHANNEL = 'fleetxds_decisions';
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5000;
/** Decisions read per query while catching up. */
const PAGE = 500;

export interface PostgresLogOptions {
  url: string;
  /** How often to look for decisions whose notification was missed (default 1 s). */
  pollMs: number;
  /** Bound on every query, so a store that stopped answering counts as unreachable. */
  queryTimeoutMs: number;
  replica: string;
  log: Logger;
}

interface DecisionRow {
  seq: string;
  at: Date;
  replica: string;
  actor: string;
  body: unknown;
}

export class PostgresDecisionLog {
  private client?: pg.Client;
  private connecting?: Promise<void>;
  private closed = false;
  private retryMs = RETRY_MIN_MS;
  private retryTimer?: NodeJS.Timeout;
  private readonly pollTimer: NodeJS.Timeout;
  private state: SharedLogStatus = { connected: false, newestSeq: 0, since: new Date().toISOString() };
  /** Called when decisions may be waiting: after a notification, a poll that saw a newer one, a reconnect. */
  private wake: () => void = () => undefined;

  constructor(private readonly opts: PostgresLogOptions) {
    this.pollTimer = setInterval(() => this.poll(), opts.pollMs);
    this.pollTimer.unref();
  }

  onWake(fn: () => void): void {
    this.wake = fn;
  }

  status(): SharedLogStatus {
    return { ...this.state };
  }

  /** Connects (or reconnects); resolves once connected or once this attempt failed. */
  start(): Promise<void> {
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<void> {
    if (this.closed || this.client) return;
    const client = new pg.Client({
      connectionString: this.opts.url,
      connectionTimeoutMillis: this.opts.queryTimeoutMs,
      query_timeout: this.opts.queryTimeoutMs,
      keepAlive: true,
      application_name: `fleetxds ${this.opts.replica}`,
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    client.on('notification', (n) => {
      if (n.channel !== CHANNEL) return;
      const seq = Number(n.payload);
      if (Number.isSafeInteger(seq) && seq > this.state.newestSeq) this.state.newestSeq = seq;
      this.wake();
    });
    try {
      await client.connect();
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [CHANNEL]);
      try {
        await client.query(readFileSync(projectPath('migrations/postgres/decisions.sql'), 'utf8'));
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [CHANNEL]);
      }
      await client.query(`LISTEN ${CHANNEL}`);
      if (this.closed) {
        await client.end();
        return;
      }
      this.client = client;
      this.retryMs = RETRY_MIN_MS;
      this.state = { connected: true, newestSeq: this.state.newestSeq, since: new Date().toISOString() };
      this.opts.log.info('connected to the shared decision store');
      this.wake();
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      this.lost(client, err as Error);
    }
  }

  private lost(client: pg.Client, err: Error): void {
    if (this.client && this.client !== client) return;
    const wasConnected = this.state.connected;
    this.client = undefined;
    client.removeAllListeners('end');
    void client.end().catch(() => undefined);
    this.state = { ...this.state, connected: false, lastError: err.message, since: new Date().toISOString() };
    if (this.closed) return;
    if (wasConnected)
      this.opts.log.error({ err: err.message }, 'shared decision store unreachable; serving what is served');
    if (!this.retryTimer) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        void this.start();
      }, this.retryMs);
      this.retryTimer.unref();
      this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
    }
  }

  private poll(): void {
    // While disconnected the retry timer reconnects (with backoff); the poll only looks for decisions.
    if (!this.client) return;
    this.client
      .query<{ seq: string | null }>(`SELECT MAX(seq) AS seq FROM ${CHANNEL}`)
      .then((r) => {
        const seq = Number(r.rows[0]?.seq ?? 0);
        if (seq > this.state.newestSeq) {
          this.state.newestSeq = seq;
          this.wake();
        }
      })
      .catch((err: Error) => this.client && this.lost(this.client, err));
  }

  private connected(): pg.Client {
    if (!this.client)
      throw new FleetError(
        ErrorCodes.SHARED_UNAVAILABLE,
        `the shared decision store is unreachable (${this.state.lastError ?? 'not connected'}); nothing was ` +
          'decided, every replica keeps serving what it serves',
      );
    return this.client;
  }

  /** Appends a decision; its sequence number once PostgreSQL committed it (and notified every replica). */
  async append(decision: Decision, actor: string): Promise<number> {
    const client = this.connected();
    try {
      const r = await client.query<{ seq: string }>(
        `WITH d AS (INSERT INTO ${CHANNEL} (replica, actor, body) VALUES ($1, $2, $3) RETURNING seq)
         SELECT seq, pg_notify('${CHANNEL}', seq::text) FROM d`,
        [this.opts.replica, actor, JSON.stringify(decision)],
      );
      return Number(r.rows[0]?.seq);
    } catch (err) {
      this.lost(client, err as Error);
      throw new FleetError(
        ErrorCodes.SHARED_UNAVAILABLE,
        `the shared decision store failed (${(err as Error).message}); the decision may not have been recorded`,
      );
    }
  }

  /**
   * Decisions after `seq`, oldest first (at most one page). A row whose body is not a decision
   * (written by a newer build, or by hand) is returned as undefined so it is skipped, not fatal.
   */
  async since(seq: number): Promise<(LoggedDecision | { seq: number; decision: undefined })[]> {
    const client = this.connected();
    const r = await client.query<DecisionRow>(
      `SELECT seq, at, replica, actor, body FROM ${CHANNEL} WHERE seq > $1 ORDER BY seq LIMIT ${PAGE}`,
      [seq],
    );
    return r.rows.map((row) => {
      const decision = parseDecision(row.body);
      const n = Number(row.seq);
      if (n > this.state.newestSeq) this.state.newestSeq = n;
      if (!decision) return { seq: n, decision: undefined };
      return { seq: n, at: row.at.toISOString(), replica: row.replica, actor: row.actor, decision };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.pollTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}
