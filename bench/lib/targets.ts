/**
 * The targets the benchmarks answer to, each printed beside its figure at the end of `npm run bench`.
 *
 * The scenarios record what they measured under keys (`record`); each target says which figure it
 * reads, its limit (every target is an upper limit), and, where the run measured one, the same
 * figure for the floor of this machine: the bare server that does only the transport's work (a
 * limit that the floor misses too is out of reach of any server on this machine). A target whose
 * scenario did not run, or ran at other sizes (`--quick`), is reported as not measured.
 */

/** What a run measured: `scenario.point.server.field` -> value. */
export type Figures = ReadonlyMap<string, number>;

export interface Target {
  /** What is asked, in words. */
  readonly text: string;
  /** The `npm run bench` scenario that measures it. */
  readonly scenario: string;
  readonly limit: number;
  readonly unit: string;
  /** fleetxds's figure, and the floor's where one exists; undefined when not measured. */
  measure(f: Figures): { value: number; floor?: number } | undefined;
}

export type Verdict = 'met' | 'above' | 'not measured';

export type TargetRow = {
  target: string;
  limit: string;
  fleetxds: string;
  floor: string;
  verdict: Verdict;
};

/** Adds the numeric fields of `row` to `into`, each under `prefix.field`. */
export function record(into: Map<string, number>, prefix: string, row: object): void {
  for (const [k, v] of Object.entries(row))
    if (typeof v === 'number' && Number.isFinite(v)) into.set(`${prefix}.${k}`, v);
}

/** The ratio of two recorded figures; undefined when either is missing. */
function ratio(f: Figures, a: string, b: string): number | undefined {
  const [x, y] = [f.get(a), f.get(b)];
  return x === undefined || y === undefined || y === 0 ? undefined : x / y;
}
const one = (value: number | undefined, floor?: number) => (value === undefined ? undefined : { value, floor });

type Point = readonly [services: number, streams: number];
/** The peers points, as the issue that asked for them: many streams of a small config, fewer of a larger one. */
export const PEER_POINTS: readonly Point[] = [
  [100, 5000],
  [1000, 1000],
];
/** fleetxds and the floor at twice the streams of the first point (go-control-plane left out: 1.3 GB). */
export const PEER_DOUBLE: Point = [100, 10_000];
/** The sizes the other targets are set at: services in the tree, REST polls held. */
const TREE = 10_000;
const POLLS = 10_000;

/** Where each scenario's figures are recorded (`record`'s prefix): the one format scenarios and targets share. */
export const figureKey = {
  pipeline: (services: number) => `pipeline.${services}`,
  restart: (services: number) => `restart.${services}`,
  rest: (polls: number, server: string) => `rest.${polls}.${server}`,
  peers: ([services, streams]: Point, server: string, client: ClientShape) =>
    `peers.${client}.${services}x${streams}.${server}`,
  registration: (endpoints: number) => `registration.${endpoints}`,
  locality: (services: number, streams: number, locality: string) => `locality.${services}x${streams}.${locality}`,
  ttl: (streams: number, mode: string) => `ttl.${streams}.${mode}`,
};

/** The TTL renewal targets' point: an overrides layer of 1,000 values held by 5,000 streams. */
const TTL_STREAMS = 5000;

/** The locality targets' point: 1,000 services, 5,000 streams over three zones. */
const LOCALITY: Point = [1000, 5000];
const localityRatio = (f: Figures, field: string) =>
  ratio(
    f,
    `${figureKey.locality(...LOCALITY, 'failover')}.${field}`,
    `${figureKey.locality(...LOCALITY, 'none')}.${field}`,
  );

/** Registered endpoints the registration targets are set at (1,000 services, 1,000 ADS streams). */
const REGISTERED = 10_000;

const [FIRST] = PEER_POINTS as [Point];
/**
 * How the peers' fan-out client reads and ACKs (bench/scenarios/peers.ts): `batching` (Go, many
 * streams per wake-up) or `trickling` (grpc-js, each response decoded and ACKed as it arrives).
 */
export type ClientShape = 'batching' | 'trickling';
export const CLIENT_SHAPES: readonly ClientShape[] = ['batching', 'trickling'];
const rest = (server: string, field: string) => `${figureKey.rest(POLLS, server)}.${field}`;
/** A count as the targets' texts write it (10,000). */
const count = (n: number) => n.toLocaleString('en-US');

/** fleetxds against go-control-plane, per point and figure (the issue asks at most 0.5x for each). */
const AGAINST_GCP: [field: string, words: string][] = [
  ['routeP99', 'one-route p99'],
  ['routeCpu', 'one-route server CPU'],
  ['endpointP99', 'one-endpoint p99'],
  ['endpointCpu', 'one-endpoint server CPU'],
  ['stormP99', 'reconnect storm p99'],
  ['stormCpu', 'reconnect storm server CPU'],
  ['kbPerStream', 'RSS per held stream'],
];

/** The figure `field` of `server` at `point`, as the `client` shape measured it. */
const peer = (client: ClientShape, point: Point, server: string, field: string) =>
  `${figureKey.peers(point, server, client)}.${field}`;

/** fleetxds against the bare-http2 floor, for one client shape. */
function againstFloor(client: ClientShape): Target[] {
  const at = (point: Point, server: string, field: string) => peer(client, point, server, field);
  const by = `, ${client} client`;
  return [
    {
      text: `one-route push to ${count(FIRST[1])} streams: server CPU / the bare-http2 floor${by}`,
      scenario: 'peers',
      limit: 1.25,
      unit: 'x',
      measure: (f) => one(ratio(f, at(FIRST, 'fleetxds', 'routeCpu'), at(FIRST, 'bare-http2', 'routeCpu'))),
    },
    {
      text: `one-route push to ${count(FIRST[1])} streams: p99 / the floor p99${by}`,
      scenario: 'peers',
      limit: 1.1,
      unit: 'x',
      measure: (f) => one(ratio(f, at(FIRST, 'fleetxds', 'routeP99'), at(FIRST, 'bare-http2', 'routeP99'))),
    },
    {
      // Its bytes are about 30 times fewer: what is left is the cost of a push and its ACK per stream.
      text: `one-endpoint push to ${count(FIRST[1])} streams: server CPU / the one-route push's${by}`,
      scenario: 'peers',
      limit: 0.5,
      unit: 'x',
      measure: (f) =>
        one(
          ratio(f, at(FIRST, 'fleetxds', 'endpointCpu'), at(FIRST, 'fleetxds', 'routeCpu')),
          ratio(f, at(FIRST, 'bare-http2', 'endpointCpu'), at(FIRST, 'bare-http2', 'routeCpu')),
        ),
    },
  ];
}

/**
 * fleetxds against itself at twice the streams (the floor's own ratio beside it). Measured with
 * the batching client only: 10,000 grpc-js channels in one client process take minutes to
 * connect, and doubling is a question of scale, not of how ACKs arrive.
 */
function atTwiceTheStreams(): Target[] {
  const at = (point: Point, server: string, field: string) => peer('batching', point, server, field);
  return [
    ...(
      [
        ['routeP99', 'one-route p99'],
        ['routeCpu', 'one-route server CPU'],
        ['stormP99', 'reconnect storm p99'],
        ['stormCpu', 'reconnect storm server CPU'],
      ] as const
    ).map(([field, words]): Target => ({
      text: `${count(PEER_DOUBLE[1])} streams against ${count(FIRST[1])}: ${words}`,
      scenario: 'peers',
      limit: 2,
      unit: 'x',
      measure: (f) =>
        one(
          ratio(f, at(PEER_DOUBLE, 'fleetxds', field), at(FIRST, 'fleetxds', field)),
          ratio(f, at(PEER_DOUBLE, 'bare-http2', field), at(FIRST, 'bare-http2', field)),
        ),
    })),
    {
      text: `RSS per idle stream at ${count(PEER_DOUBLE[1])} streams`,
      scenario: 'peers',
      limit: 40,
      unit: 'KB',
      measure: (f) =>
        one(f.get(at(PEER_DOUBLE, 'fleetxds', 'kbPerStream')), f.get(at(PEER_DOUBLE, 'bare-http2', 'kbPerStream'))),
    },
  ];
}

/** fleetxds against go-control-plane, per point and figure, for one client shape. */
function againstGoControlPlane(client: ClientShape): Target[] {
  return PEER_POINTS.flatMap((point) =>
    AGAINST_GCP.map(([field, words]): Target => ({
      text: `${count(point[0])} services, ${count(point[1])} streams: ${words} / go-control-plane's, ${client} client`,
      scenario: 'peers',
      limit: 0.5,
      unit: 'x',
      measure: (f) => {
        const gcp = peer(client, point, 'go-control-plane', field);
        return one(
          ratio(f, peer(client, point, 'fleetxds', field), gcp),
          ratio(f, peer(client, point, 'bare-http2', field), gcp),
        );
      },
    })),
  );
}

const LOCALITY_TEXT =
  `one-endpoint change, ${count(LOCALITY[0])} services failing over by distance, ` +
  `${count(LOCALITY[1])} streams in 3 zones`;

export const TARGETS: readonly Target[] = [
  ...(['sotw', 'delta'] as const).map((mode): Target => ({
    text:
      `TTL renewals of a 1,000-value overrides layer held by ${count(TTL_STREAMS)} ` +
      `${mode === 'sotw' ? 'SotW' : 'delta'} ADS streams: server CPU above idle, share of one core`,
    scenario: 'ttl',
    limit: 5,
    unit: '%',
    measure: (f) => one(f.get(`${figureKey.ttl(TTL_STREAMS, mode)}.renewalCpuPercent`)),
  })),
  {
    text: `${LOCALITY_TEXT}: server CPU / without locality`,
    scenario: 'locality',
    limit: 1.2,
    unit: 'x',
    measure: (f) => one(localityRatio(f, 'endpointCpu')),
  },
  {
    text: `${LOCALITY_TEXT}: p99 / without locality`,
    scenario: 'locality',
    limit: 1.2,
    unit: 'x',
    measure: (f) => one(localityRatio(f, 'endpointP99')),
  },
  {
    text: `${count(REGISTERED)} registered endpoints heartbeating every 10 s: server CPU, share of one core`,
    scenario: 'registration',
    limit: 10,
    unit: '%',
    measure: (f) => one(f.get(`${figureKey.registration(REGISTERED)}.heartbeatCpuPercent`)),
  },
  {
    text: `the same: pushes to 1,000 ADS streams while nothing but heartbeats arrives`,
    scenario: 'registration',
    limit: 0,
    unit: '',
    measure: (f) => one(f.get(`${figureKey.registration(REGISTERED)}.pushesDuringHeartbeats`)),
  },
  {
    text: `1% of them changing health at once: p99 until all of 1,000 ADS streams have it`,
    scenario: 'registration',
    limit: 1000,
    unit: 'ms',
    measure: (f) => one(f.get(`${figureKey.registration(REGISTERED)}.healthChangeP99Ms`)),
  },
  {
    text: `one-route edit, ${count(TREE)} services: apply after the debounce`,
    scenario: 'pipeline',
    limit: 20,
    unit: 'ms',
    measure: (f) => one(f.get(`${figureKey.pipeline(TREE)}.oneRouteApplyMs`)),
  },
  {
    text: `cold start, ${count(TREE)} services + ${count(TREE)} routes, YAML to encoded snapshot`,
    scenario: 'pipeline',
    limit: 2000,
    unit: 'ms',
    measure: (f) => one(f.get(`${figureKey.pipeline(TREE)}.coldTotalMs`)),
  },
  {
    text: `restart to the first ADS answer from SQLite, ${count(TREE)} services`,
    scenario: 'restart',
    limit: 500,
    unit: 'ms',
    measure: (f) => one(f.get(`${figureKey.restart(TREE)}.msToFirstResponse`)),
  },
  ...CLIENT_SHAPES.flatMap(againstFloor),
  ...atTwiceTheStreams(),
  {
    text: `${count(POLLS)} held REST polls: server RSS`,
    scenario: 'rest',
    limit: 150,
    unit: 'MB',
    measure: (f) => one(f.get(rest('fleetxds', 'rssHeldMB')), f.get(rest('bare-http', 'rssHeldMB'))),
  },
  {
    text: `${count(POLLS)} held REST polls: all answered after the change`,
    scenario: 'rest',
    limit: 1000,
    unit: 'ms',
    measure: (f) => one(f.get(rest('fleetxds', 'releaseAllMs')), f.get(rest('bare-http', 'releaseAllMs'))),
  },
  ...CLIENT_SHAPES.flatMap(againstGoControlPlane),
];

function shown(x: number | undefined, unit: string): string {
  if (x === undefined) return '-';
  const digits = unit === 'x' ? 2 : x < 10 ? 1 : 0;
  return `${x.toFixed(digits)}${unit === 'x' ? 'x' : ` ${unit}`}`;
}

/** Each target beside what the run measured. */
export function judge(targets: readonly Target[], f: Figures): TargetRow[] {
  return targets.map((t) => {
    const m = t.measure(f);
    return {
      target: t.text,
      limit: `<= ${shown(t.limit, t.unit)}`,
      fleetxds: m ? shown(m.value, t.unit) : `- (run \`${t.scenario}\`)`,
      floor: shown(m?.floor, t.unit),
      verdict: !m ? 'not measured' : m.value <= t.limit ? 'met' : 'above',
    };
  });
}
