import type { Logger } from 'pino';
import type { ServerConfig } from '../config/server-config.ts';
import type { RegistrationDoc } from '../model/schema.ts';
import { Membership } from '../membership/membership.ts';
import type { Stores } from '../store/database.ts';
import type { Teardown } from './teardown.ts';

type PostgresSettings = NonNullable<NonNullable<ServerConfig['replica']>['postgres']>;

/** How often TTLs and drain times are applied to registered endpoints. */
const SWEEP_MS = 200;
/** Registration changes within this window go out as one push. */
const MEMBERS_COALESCE_MS = 20;

/**
 * Endpoints registered at run time: restored from the store (each with a fresh TTL), their changes
 * coalesced into one EDS push (`changed`). `policyOf` and `changed` are called only once the server
 * serves, so they may reach what is made after this.
 */
export function registeredEndpoints(
  stores: Stores,
  teardown: Teardown,
  policyOf: (service: string) => RegistrationDoc | undefined,
  changed: (services: ReadonlySet<string>) => void,
): Membership {
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  const membership = new Membership(
    policyOf,
    (services) => {
      for (const s of services) pending.add(s);
      timer ??= setTimeout(() => {
        timer = undefined;
        const batch = new Set(pending);
        pending.clear();
        changed(batch);
      }, MEMBERS_COALESCE_MS);
    },
    stores.registrations,
  );
  teardown.stopFirst('the registration push timer', () => clearTimeout(timer));
  membership.restore();
  return membership;
}

/**
 * Applies TTLs and drain times from now on, and shares the membership with the other replicas
 * through the PostgreSQL they share decisions through (when they do).
 */
export async function keepEndpoints(
  membership: Membership,
  pg: PostgresSettings | undefined,
  log: Logger,
  teardown: Teardown,
): Promise<void> {
  if (pg) {
    const { SharedMembership } = await import('../membership/shared-membership.ts');
    const shared = new SharedMembership(
      pg.url,
      membership,
      log.child({ component: 'membership' }),
      pg.queryTimeoutMs ?? 3000,
    );
    membership.observer = shared;
    teardown.stopFirst('sharing registrations', () => shared.close());
    await shared.start();
  }
  const sweep = setInterval(() => membership.sweep(), SWEEP_MS);
  sweep.unref();
  teardown.stopFirst('the registration sweep', () => clearInterval(sweep));
}
