import type { Sqlite } from './sqlite.ts';

/** A registered endpoint as stored: what the registering VM said, and its state. */
export interface StoredRegistration {
  service: string;
  address: string;
  weight?: number;
  region?: string;
  zone?: string;
  subZone?: string;
  health: 'healthy' | 'unhealthy' | 'draining';
  identity: string;
  /** ms since the epoch. */
  lastSeen: number;
  drainUntil?: number;
  /** When its state or attributes last changed (ms since the epoch): between replicas, the newest wins. */
  updatedAt?: number;
}

/** Endpoints registered at run time, written on a change of membership or health. */
export class RegistrationStore {
  constructor(private readonly db: Sqlite) {}

  list(): StoredRegistration[] {
    const rows = this.db.prepare('SELECT entry FROM registrations ORDER BY service, address').all() as {
      entry: string;
    }[];
    return rows.map((r) => JSON.parse(r.entry) as StoredRegistration);
  }

  put(r: StoredRegistration, at = new Date()): void {
    this.db
      .prepare(
        'INSERT INTO registrations (service, address, entry, updated_at) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT (service, address) DO UPDATE SET entry = excluded.entry, updated_at = excluded.updated_at',
      )
      .run(r.service, r.address, JSON.stringify(r), at.toISOString());
  }

  remove(service: string, address: string): void {
    this.db.prepare('DELETE FROM registrations WHERE service = ? AND address = ?').run(service, address);
  }
}
