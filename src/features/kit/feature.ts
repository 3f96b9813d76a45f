/**
 * What a feature of the YAML model is: the fields it adds to documents, the rules a schema cannot
 * express, and what it adds to Envoy's resources at the few places a feature reaches (HTTP filters
 * and their per-route settings, connection-manager fields, access logs, the services it calls). A
 * feature sees only its own fields: its hooks are typed by the part of a document they read, so a
 * listener, virtual host or route document fits them all and no feature reaches into another's.
 */
import type { TSchema } from '@sinclair/typebox';
import type { DiagnosticCode, PathSegment } from '../../shared/diagnostics.ts';
import type { JsonObject } from './envoy-json.ts';

/** TypeBox properties a feature adds to one kind of document. */
export type FieldSchemas = Readonly<Record<string, TSchema>>;

export interface FeatureFields {
  readonly listener?: FieldSchemas;
  readonly virtualHost?: FieldSchemas;
  readonly route?: FieldSchemas;
  readonly service?: FieldSchemas;
}

/** A service as a feature's checks see it. */
export interface ServiceView {
  readonly name: string;
  readonly protocol?: string;
}

/**
 * How a feature's checks report on the document they check: a path is the document's (as in the
 * YAML), and the diagnostic lands at its file:line:column.
 */
export interface FeatureCheck {
  error(code: DiagnosticCode, path: readonly PathSegment[], message: string): void;
  warn(code: DiagnosticCode, path: readonly PathSegment[], message: string): void;
  /** Refuses a regex Envoy's RE2 refuses, or whose program exceeds Envoy's size limit. */
  regex(pattern: string, path: readonly PathSegment[]): void;
  /** The named service; a missing one is reported at `path` (with a suggestion). */
  service(path: readonly PathSegment[], name: string): ServiceView | undefined;
}

/**
 * Where a feature's HTTP filters run in Envoy's chain, first to last on a request (responses pass
 * them in reverse). The listener builder orders filters by this, then by the registry's order.
 */
export const HTTP_PHASES = [
  // Answered before anything asks for credentials: a browser's preflight carries none.
  'preflight',
  // Who may call, and how often: address rules, tokens, external authorization, rate limits.
  'protection',
  // Last before the router, so the first to see a response: compression.
  'response',
] as const;
export type HttpPhase = (typeof HTTP_PHASES)[number];

/** Which proxyless gRPC clients honour the feature (fleetxds sends them API listeners and routes). */
export type GrpcSupport<S = never> =
  | { readonly kind: 'envoy-only'; readonly why: string }
  | {
      readonly kind: 'grpc';
      /**
       * Its rows of the gRPC feature table (`GRPC_FEATURES` in src/model/grpc-compat.ts), each with
       * whether a service sets what the row is about (validation warns of clients without it).
       */
      readonly rows: readonly { readonly row: string; readonly uses: (s: S) => boolean }[];
    };

/** `L`, `V`, `R`, `S`: the parts of a listener, virtual host, route and service the feature reads. */
export interface Feature<L = never, V = never, R = never, S = never> {
  /** Its folder under src/features/. */
  readonly name: string;
  /** Where operators read about it: a page of docs/ and a heading's anchor. */
  readonly docs: string;
  readonly fields: FeatureFields;
  readonly grpc: GrpcSupport<S>;
  readonly checks?: {
    readonly listener?: (l: L, c: FeatureCheck) => void;
    readonly virtualHost?: (v: V, c: FeatureCheck) => void;
    /** `path`: where the route is in its virtual host (`['routes', 3]`). */
    readonly route?: (r: R, path: readonly PathSegment[], c: FeatureCheck) => void;
    /** What a virtual host asks of each listener that carries it; `c` reports on the virtual host. */
    readonly carried?: (l: L, v: V, c: FeatureCheck) => void;
    readonly service?: (s: S, c: FeatureCheck) => void;
  };
  /** Fields of the Envoy Cluster a service becomes; `proxyless`: the cluster of gRPC applications. */
  readonly cluster?: (s: S, at: { readonly proxyless: boolean }) => JsonObject | undefined;
  /** The service's ClusterLoadAssignment (its endpoints by locality) as the feature changes it. */
  readonly loadAssignment?: (s: S, cla: JsonObject) => JsonObject;
  readonly http?: {
    readonly phase: HttpPhase;
    /** Its filters on this listener, given the virtual hosts the listener carries. */
    readonly filters?: (l: L, vhosts: readonly V[]) => JsonObject[];
    /**
     * What a route configuration, virtual host or route sets for its filters (typed_per_filter_config
     * entries); `forwarded`: the listener carrying it takes client addresses from x-forwarded-for.
     */
    readonly perFilterConfig?: (o: V | R, forwarded: boolean) => JsonObject | undefined;
    /**
     * Its filters (by name) whose listener-wide settings are policy an operator edits: they reach
     * the proxies as extension configs (ECDS) the listener names, so an edit reaches connections
     * already open and drains none. Filters whose settings live in routes need not be here.
     */
    readonly discovered?: readonly string[];
  };
  /** Fields of an HTTP listener's connection manager, given the virtual hosts it carries. */
  readonly connectionManager?: (l: L, vhosts: readonly V[]) => JsonObject | undefined;
  /** Network filters of a TCP listener's chains, before its TCP proxy. */
  readonly networkFilters?: (l: L) => JsonObject[];
  /** Fields of an Envoy VirtualHost. */
  readonly virtualHostFields?: (v: V) => JsonObject | undefined;
  /** Fields of a route's action (where it forwards), given its virtual host. */
  readonly routeAction?: (r: R, v: V) => JsonObject | undefined;
  /** Envoy `access_log` entries; `tcp`: for the TCP proxy (a connection, not a request). */
  readonly accessLog?: (l: L, tcp: boolean) => JsonObject[];
  /** The services the listener's use of it calls (each gets a cluster). */
  readonly services?: (l: L) => string[];
}

/** Names a feature with its types inferred from its hooks. */
export function defineFeature<L, V, R, S, const F extends FeatureFields>(
  f: Feature<L, V, R, S> & { readonly fields: F },
): Feature<L, V, R, S> & { readonly fields: F } {
  return f;
}
