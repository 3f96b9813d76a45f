import type {
  GrpcServiceDoc,
  GrpcServerDoc,
  GuardDoc,
  ListenerDoc,
  RolloutDoc,
  RuntimeDoc,
  NodeGroupDoc,
  SecretDoc,
  ServiceDoc,
  VirtualHostDoc,
} from './schema.ts';
import type { EnvoyPatchDoc } from './patch-schema.ts';
import { findByName } from '../shared/sorted-lists.ts';

/** Where a document came from; kept in the model so translation problems can be located too. */
export interface Origin {
  file: string;
  /** Document index inside the file. */
  index: number;
  /** 1-based line of the document start. */
  line: number;
}

export const DEFAULT_GROUP = 'default';
export const MODEL_SCHEMA_VERSION = 1;

/**
 * The validated model: exactly the operator's documents (no defaults filled in, so history diffs
 * show what people wrote), each list sorted by name. Stored as JSON in SQLite per applied version.
 */
export interface Model {
  schemaVersion: typeof MODEL_SCHEMA_VERSION;
  services: ServiceDoc[];
  listeners: ListenerDoc[];
  virtualHosts: VirtualHostDoc[];
  grpcServices: GrpcServiceDoc[];
  /** xDS-enabled gRPC servers; absent in models stored before they existed. */
  grpcServers?: GrpcServerDoc[];
  secrets: SecretDoc[];
  nodeGroups: NodeGroupDoc[];
  /** Safety limits (at most one); absent in models stored before it existed. */
  guards?: GuardDoc[];
  /** Staged delivery policy (at most one); absent in models stored before it existed. */
  rollouts?: RolloutDoc[];
  /** Changes to generated Envoy resources; absent in models stored before they existed. */
  envoyPatches?: EnvoyPatchDoc[];
  /** Runtime values served over RTDS; absent in models stored before they existed. */
  runtimes?: RuntimeDoc[];
}

export type ModelListName = keyof Omit<Model, 'schemaVersion'>;

/** An operator document of any kind, as a model list holds it. */
export type Doc = Model[ModelListName] extends (infer D)[] | undefined ? D : never;

/** The model list each document kind goes to: validation fills the lists, the store packs them by file. */
export type DocKind = keyof typeof LIST_OF;

export const LIST_OF = {
  Service: 'services',
  Listener: 'listeners',
  VirtualHost: 'virtualHosts',
  GrpcService: 'grpcServices',
  GrpcServer: 'grpcServers',
  Secret: 'secrets',
  NodeGroup: 'nodeGroups',
  Guard: 'guards',
  Rollout: 'rollouts',
  EnvoyPatch: 'envoyPatches',
  Runtime: 'runtimes',
} as const satisfies Record<string, ModelListName>;

/** Model lists are sorted by name (the order validation produces and a restored model must have). */
export function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

export function originKey(kind: string, name: string): string {
  return `${kind}/${name}`;
}

export function emptyModel(): Model {
  return {
    schemaVersion: MODEL_SCHEMA_VERSION,
    services: [],
    listeners: [],
    virtualHosts: [],
    grpcServices: [],
    grpcServers: [],
    secrets: [],
    nodeGroups: [],
    guards: [],
    rollouts: [],
    envoyPatches: [],
    runtimes: [],
  };
}

/**
 * Where each document came from, by document identity: a parsed document is one object, never
 * changed, from one place in one file; the model's lists hold these very objects. Recorded when a
 * file's documents are taken into a model (src/model/assemble.ts) or a stored model is read back.
 */
const ORIGINS = new WeakMap<object, Origin>();

export function originOf(doc: object): Origin | undefined {
  return ORIGINS.get(doc);
}

export function recordOrigin(doc: object, origin: Origin): void {
  ORIGINS.set(doc, origin);
}

/** The document of `kind` named `name`: lists are sorted by name, so a binary search. */
export function docOf(model: Model, kind: string, name: string): Doc | undefined {
  return findByName((model[LIST_OF[kind as DocKind]] ?? []) as Doc[], name);
}

/** Where the document `Kind/name` (an origin key) of a model came from. */
export function originIn(model: Model, key: string): Origin | undefined {
  const slash = key.indexOf('/');
  const doc = docOf(model, key.slice(0, slash), key.slice(slash + 1));
  return doc && originOf(doc);
}

/** Every node group the model defines, plus the implicit `default`. Sorted by name. */
export function groupNames(model: Model): string[] {
  const names = new Set<string>([DEFAULT_GROUP, ...model.nodeGroups.map((g) => g.name)]);
  return [...names].sort();
}

export function listenerGroups(l: { groups?: string[] }): string[] {
  return l.groups ?? [DEFAULT_GROUP];
}

/** The services a route sends requests to (`to`, each `split` target). */
export function routeTargets(r: { to?: string; split?: readonly { service: string }[] }): string[] {
  return [...(r.to === undefined ? [] : [r.to]), ...(r.split ?? []).map((t) => t.service)];
}

/** What a client connects to for a service: an aggregate's members (those defined), else the service. */
export function connectedServices(model: Model, s: ServiceDoc): ServiceDoc[] {
  return s.aggregate ? s.aggregate.flatMap((m) => findByName(model.services, m) ?? []) : [s];
}

/**
 * A node group of gRPC applications only: it carries gRPC services or servers and no Envoy
 * listener. Its clusters take TLS from the applications' certificate providers (gRFC A29), not SDS.
 */
export function isProxylessGroup(model: Model, group: string): boolean {
  const has = (docs: readonly { groups?: string[] }[] | undefined) =>
    (docs ?? []).some((d) => listenerGroups(d).includes(group));
  return !has(model.listeners) && (has(model.grpcServices) || has(model.grpcServers));
}

/**
 * TLS material read for a Secret document: an input of translation like the model, but never
 * stored (only its fingerprint is shown or persisted).
 */
export interface SecretMaterial {
  name: string;
  certificateChain?: string;
  privateKey?: string;
  ca?: string;
  /** sha256 over the PEM contents (what status pages show instead of the material). */
  fingerprint: string;
  /** Leaf certificate expiry, ISO time. */
  notAfter?: string;
  subject?: string;
  /** Absolute paths read, to be watched. */
  files: string[];
}
