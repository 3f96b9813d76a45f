/**
 * Prometheus metrics (prom-client), fed by the status registry and the pipeline's events; core
 * modules do not import the metrics library.
 */
import client from 'prom-client';
import type { SharedDecisionStatus } from '../decision-log/decision.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import type { NodeRegistry } from './node-registry.ts';
import { PushHealth } from './push-health.ts';
import { TypeUrls } from '../xds/resource-types.ts';

/** What the metrics need of a rollout under way. */
export interface RolloutMetrics {
  stage: number;
  halted: boolean;
  to: number;
}

const typeName = (typeUrl: string) => typeUrl.slice(typeUrl.lastIndexOf('.') + 1);

/** `{ type }` labels by type URL, made once (prom-client only reads them). */
const TYPE_LABELS = new Map<string, { type: string }>();
function typeLabel(typeUrl: string): { type: string } {
  let labels = TYPE_LABELS.get(typeUrl);
  if (!labels) TYPE_LABELS.set(typeUrl, (labels = { type: typeName(typeUrl) }));
  return labels;
}

/**
 * A counter by resource type that a push bumps once per stream, thousands of times per change:
 * events are tallied in a plain map and added to prom-client's counter when it is read, instead of
 * prom-client hashing the label set on every event. Returns the function that counts one event.
 */
function typeCounter(registry: client.Registry, name: string, help: string): (typeUrl: string) => void {
  const tally = new Map<string, number>();
  new client.Counter({
    name,
    help,
    labelNames: ['type'],
    registers: [registry],
    collect() {
      for (const [typeUrl, n] of tally) this.inc({ type: typeName(typeUrl) }, n);
      tally.clear();
    },
  });
  return (typeUrl) => void tally.set(typeUrl, (tally.get(typeUrl) ?? 0) + 1);
}

/** The gauges read at each scrape: clients, certificates, the served version, the rollout, the shared store. */
function fleetGauges(
  reg: client.Registry,
  registry: NodeRegistry,
  cache: SnapshotCache,
  rollout: () => RolloutMetrics | undefined,
  shared: () => SharedDecisionStatus | undefined,
): void {
  new client.Gauge({
    name: 'fleetxds_connected_clients',
    help: 'Open xDS streams by transport; REST: nodes that polled in the last 5 minutes',
    labelNames: ['transport'],
    registers: [reg],
    collect() {
      this.reset();
      const by = new Map<string, number>();
      for (const s of registry.connected()) by.set(s.transport, (by.get(s.transport) ?? 0) + 1);
      const recent = Date.now() - 300_000;
      by.set('rest', registry.polling().filter((p) => Date.parse(p.lastSeenAt ?? '') > recent).length);
      for (const [t, n] of by) this.set({ transport: t }, n);
    },
  });
  new client.Gauge({
    name: 'fleetxds_client_certificate_expiry_earliest_timestamp_seconds',
    help:
      'When the first to expire of the client certificates connected proxies presented expires (Unix time); ' +
      "absent without mTLS clients; the status shows each node's certificate",
    registers: [reg],
    collect() {
      this.reset();
      let earliest = Infinity;
      for (const s of [...registry.connected(), ...registry.polling()]) {
        const at = s.clientCertificate ? Date.parse(s.clientCertificate.notAfter) : NaN;
        if (at < earliest) earliest = at;
      }
      if (earliest !== Infinity) this.set(earliest / 1000);
    },
  });
  new client.Gauge({
    name: 'fleetxds_config_version',
    help: 'Id of the config version being served',
    registers: [reg],
    collect() {
      this.set(cache.current?.versionId ?? 0);
    },
  });
  new client.Gauge({
    name: 'fleetxds_rollout_stage',
    help: 'Index of the stage a staged rollout is at (0 = first); -1 when none is under way',
    registers: [reg],
    collect() {
      this.set(rollout()?.stage ?? -1);
    },
  });
  new client.Gauge({
    name: 'fleetxds_rollout_halted',
    help: '1 while a staged rollout is halted (by a NACK or an operator)',
    registers: [reg],
    collect() {
      this.set(rollout()?.halted ? 1 : 0);
    },
  });
  new client.Gauge({
    name: 'fleetxds_rollout_target_version',
    help: 'Config version a staged rollout is delivering; 0 when none is under way',
    registers: [reg],
    collect() {
      this.set(rollout()?.to ?? 0);
    },
  });
  new client.Gauge({
    name: 'fleetxds_shared_store_up',
    help: '1 while the shared decision store (PostgreSQL) is reachable, 0 while not; -1 when not shared',
    registers: [reg],
    collect() {
      const s = shared();
      this.set(s ? Number(s.connected) : -1);
    },
  });
  new client.Gauge({
    name: 'fleetxds_shared_decisions_behind',
    help:
      'Shared decisions in the store this replica has not applied yet; -1 while it cannot know (the store ' +
      'unreachable, or not read to its end since it was reached)',
    registers: [reg],
    collect() {
      const s = shared();
      this.set(s ? (s.behind ?? -1) : 0);
    },
  });
}

export class Metrics {
  readonly registry = new client.Registry();
  private readonly pushes = typeCounter(
    this.registry,
    'fleetxds_pushes_total',
    'Responses sent to clients, by resource type',
  );
  private readonly acks = typeCounter(this.registry, 'fleetxds_acks_total', 'ACKs received, by resource type');
  private readonly nacks = typeCounter(
    this.registry,
    'fleetxds_nacks_total',
    'NACKs received (REST: inferred), by resource type',
  );
  private readonly warmingHolds = new client.Counter({
    name: 'fleetxds_warming_holds_total',
    help:
      'Pushes whose listeners and routes waited for the endpoints of clusters added by the same change, by ' +
      'outcome (delivered, or expired: sent anyway after the hold limit)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  private readonly latency = new client.Histogram({
    name: 'fleetxds_push_latency_seconds',
    help: 'From a config version being applied to a client ACKing it, by resource type',
    labelNames: ['type'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly validationFailures = new client.Counter({
    name: 'fleetxds_validation_failures_total',
    help: 'Config trees (or secret renewals) rejected',
    registers: [this.registry],
  });
  readonly registrationRefusals = new client.Counter({
    name: 'fleetxds_registration_refusals_total',
    help:
      'Registration API calls refused, by action (register, drain, deregister) and reason (unauthenticated: no ' +
      'allowed credential; forbidden: the policy refused an allowed identity)',
    labelNames: ['action', 'reason'],
    registers: [this.registry],
  });
  readonly readFailures = new client.Counter({
    name: 'fleetxds_config_read_failures_total',
    help:
      'Reads of the config tree that could not complete for a reason that passes (too many open files, I/O ' +
      'errors, files removed while read): not rejections; the tree is read again within seconds',
    registers: [this.registry],
  });
  readonly applyDuration = new client.Histogram({
    name: 'fleetxds_apply_duration_seconds',
    help: 'Read, validate, build, store and publish of a config tree',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  /**
   * When each version of each type (by type URL) was first published: the start of its push
   * latency. Looked up per ACK with the ACK's own strings, so no key is built per ACK.
   */
  private readonly publishedAt = new Map<string, Map<string, number>>();
  private published = 0;
  /** The last hour minute by minute, for the status page (Prometheus keeps the long history). */
  readonly health: PushHealth;

  constructor(
    registry: NodeRegistry,
    cache: SnapshotCache,
    replica?: string,
    rollout: () => RolloutMetrics | undefined = () => undefined,
    shared: () => SharedDecisionStatus | undefined = () => undefined,
  ) {
    // Every series names its replica, so one Prometheus sees the whole fleet side by side.
    if (replica) this.registry.setDefaultLabels({ replica });
    client.collectDefaultMetrics({ register: this.registry });
    const reg = this.registry;
    this.health = new PushHealth(() => registry.connected().length + registry.polling().length);
    fleetGauges(reg, registry, cache, rollout, shared);
    cache.onPublish((cfg) => {
      const now = Date.now();
      if (this.published > 100_000) {
        this.publishedAt.clear();
        this.published = 0;
      }
      for (const g of [...cfg.groups.values(), ...(cfg.staged?.groups.values() ?? [])])
        for (const t of Object.values(g.types)) {
          const url = TypeUrls[t.kind];
          const versions = this.publishedAt.get(url) ?? new Map<string, number>();
          this.publishedAt.set(url, versions);
          if (versions.has(t.version)) continue;
          versions.set(t.version, now);
          this.published++;
        }
    });
    registry.observe({
      sent: (typeUrl) => {
        this.pushes(typeUrl);
        this.health.pushed();
      },
      acked: (typeUrl, version) => {
        this.acks(typeUrl);
        const at = this.publishedAt.get(typeUrl)?.get(version);
        const seconds = at === undefined ? undefined : (Date.now() - at) / 1000;
        if (seconds !== undefined) this.latency.observe(typeLabel(typeUrl), seconds);
        this.health.acked(seconds);
      },
      nacked: (typeUrl) => {
        this.nacks(typeUrl);
        this.health.nacked();
      },
      warmingHeld: (outcome) => this.warmingHolds.inc({ outcome }),
    });
  }

  /** Open streams per serving thread (see grpc.threads): whether the kernel spreads connections evenly. */
  servingThreads(streamsByThread: () => number[]): void {
    new client.Gauge({
      name: 'fleetxds_grpc_thread_streams',
      help: 'Open gRPC xDS streams per serving thread (one thread: the main one)',
      labelNames: ['thread'],
      registers: [this.registry],
      collect() {
        this.reset();
        streamsByThread().forEach((n, i) => this.set({ thread: String(i) }, n));
      },
    });
  }

  listenerCertificates(served: () => { listener: string; served: { notAfter: Date } }[]): void {
    new client.Gauge({
      name: 'fleetxds_listener_certificate_expiry_timestamp_seconds',
      help: "When the certificate fleetxds's own gRPC or REST listener serves expires (Unix time), by listener",
      labelNames: ['listener'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const c of served()) this.set({ listener: c.listener }, c.served.notAfter.getTime() / 1000);
      },
    });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
