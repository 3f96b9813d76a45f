/**
 * A benchmark load generator: one child process simulating many Envoys, each with its own
 * HTTP/2 connection and one ADS stream (SotW or delta). Subscribes like Envoy does (CDS and LDS
 * wildcard, EDS for every cluster, RDS by name, the RTDS layers, ECDS when asked), ACKs every
 * response by nonce, and reports to the parent over IPC when each stream has ACKed a new version
 * of the watched type and how many bytes it received. Not a test double: it is only used to load the real server.
 */
import * as grpc from '@grpc/grpc-js';
import { lookupType } from '../../src/xds/proto-root.ts';
import { rawAdsClient } from '../../test/helpers/raw-ads.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import { OVERRIDE_LAYER, RUNTIME_LAYER } from '../../src/translate/runtime.ts';

/** The runtime layers fleetxds's bootstraps declare (here on the ADS stream, for either protocol). */
const LAYERS = [RUNTIME_LAYER, OVERRIDE_LAYER];

const [port, count, mode, prefix, routeName] = [
  Number(process.argv[2]),
  Number(process.argv[3]),
  process.argv[4] as 'sotw' | 'delta',
  process.argv[5],
  process.argv[6] ?? 'edge-0',
];
/** `a,b,c`: stream i runs in zone i mod 3 of region r (node.locality); none: no locality. */
const zones = process.argv[7]?.split(',').filter(Boolean) ?? [];
/** The extension configs the listener's filters name (ECDS), as Envoy subscribes once it has read it. */
const extensions = process.argv[8]?.split(',').filter(Boolean) ?? [];
const T = TypeUrls;
/** CDS, EDS, LDS, RDS, the runtime layers and the extension configs, as an Envoy on fleetxds's bootstrap subscribes. */
const SUBSCRIBED = 5 + (extensions.length ? 1 : 0);
const delta = mode === 'delta';
const Cluster = lookupType('envoy.config.cluster.v3.Cluster');
const Client = rawAdsClient(delta);

interface StreamState {
  ready: boolean;
  /** The types this stream received a response of. */
  got: Set<string>;
  watchedAt?: number;
  bytes: number;
  watchType?: string;
}

const states: StreamState[] = [];
/** Why streams were ended, with how many times: printed when the run is told to exit. */
const refused = new Map<string, number>();
let watch: { typeUrl: string } | undefined;
let readyCount = 0;
/** Runtime responses received by every stream (TTL renewals among them). */
let runtimeResponses = 0;

function open(i: number): void {
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
    'grpc.max_receive_message_length': -1,
  });
  const call = client.S();
  const st: StreamState = { ready: false, got: new Set(), bytes: 0 };
  states[i] = st;
  const node = {
    id: `${prefix}-${i}`,
    cluster: 'bench',
    ...(zones.length && { locality: { region: 'r', zone: zones[i % zones.length] } }),
  };
  let edsRequested = false;
  const subscribedNames = (typeUrl: string): string[] =>
    typeUrl === T.route
      ? [routeName]
      : typeUrl === T.endpoint
        ? edsNames
        : typeUrl === T.runtime
          ? LAYERS
          : typeUrl === T.extension
            ? extensions
            : [];
  call.on('data', ({ msg, size }) => {
    st.bytes += size;
    const typeUrl = msg.type_url as string;
    if (typeUrl === T.runtime) runtimeResponses++;
    if (delta) call.write({ type_url: typeUrl, response_nonce: msg.nonce });
    else
      call.write({
        type_url: typeUrl,
        version_info: msg.version_info,
        response_nonce: msg.nonce,
        resource_names: subscribedNames(typeUrl),
      });
    if (typeUrl === T.cluster && !edsRequested) {
      edsRequested = true;
      const names = (msg.resources as Record<string, any>[]).map((r) =>
        delta ? r.name : (Cluster.decode(r.value) as unknown as { name: string }).name,
      );
      edsNames = names;
      if (delta) call.write({ type_url: T.endpoint, resource_names_subscribe: names });
      else call.write({ type_url: T.endpoint, resource_names: names });
    }
    // Ready once the stream holds all four types: a stream that had its routes but not yet its endpoints would
    // still be subscribing (EDS for every cluster) while a change is measured.
    st.got.add(typeUrl);
    if (st.got.size === SUBSCRIBED && !st.ready) {
      st.ready = true;
      if (++readyCount === count) process.send!({ type: 'ready' });
    }
    if (watch && typeUrl === watch.typeUrl && st.watchedAt === undefined) {
      st.watchedAt = Date.now();
      if (states.every((s) => s.watchedAt !== undefined))
        process.send!({ type: 'acked', times: states.map((s) => s.watchedAt), bytes: states.map((s) => s.bytes) });
    }
  });
  let edsNames: string[] = [];
  // As Envoy does: a stream the server ends (refused under load, say) is opened again after a pause.
  call.on('error', (err: Error) => {
    const why = err.message.replace(/ \(\d{4}-[^)]*\)/, '').replace(/\. Resolution note: .*$/, '');
    refused.set(why, (refused.get(why) ?? 0) + 1);
    client.close();
    if (st.ready) readyCount--;
    setTimeout(() => open(i), 500 + Math.random() * 500);
  });
  if (delta) {
    call.write({ node, type_url: T.cluster });
    call.write({ type_url: T.listener });
    call.write({ type_url: T.route, resource_names_subscribe: [routeName] });
    call.write({ type_url: T.runtime, resource_names_subscribe: LAYERS });
    if (extensions.length) call.write({ type_url: T.extension, resource_names_subscribe: extensions });
  } else {
    call.write({ node, type_url: T.cluster });
    call.write({ type_url: T.listener });
    call.write({ type_url: T.route, resource_names: [routeName] });
    call.write({ type_url: T.runtime, resource_names: LAYERS });
    if (extensions.length) call.write({ type_url: T.extension, resource_names: extensions });
  }
}

process.on('message', (m: { type: string; typeUrl?: string }) => {
  if (m.type === 'watch') {
    watch = { typeUrl: m.typeUrl! };
    for (const s of states) {
      s.watchedAt = undefined;
      s.bytes = 0;
    }
    process.send!({ type: 'watching' });
  }
  if (m.type === 'runtime-responses') process.send!({ type: 'runtime-responses', count: runtimeResponses });
  if (m.type === 'exit') process.exit(0);
  if (m.type === 'errors') process.send!({ type: 'errors', errors: Object.fromEntries(refused) });
});

void (async () => {
  for (let i = 0; i < count; i++) {
    open(i);
    if (i % 100 === 99) await new Promise((r) => setTimeout(r, 60));
  }
})();
