/**
 * The trickling fan-out client of `npm run bench -- peers`: N simulated Envoys on grpc-js, each
 * with its own channel (connection) and one SotW ADS stream, subscribing as Envoy does (CDS and
 * LDS wildcard, EDS for every cluster of the first CDS response, RDS by name). Each response is
 * decoded as it arrives and ACKed at once, stream by stream, on one core: ACKs reach the server
 * spread out, one or a few per read, as from a fleet of proxies on separate hosts. The Go client
 * (bench/peers/fanout) reads and ACKs in batches instead; `peers` runs both with the same
 * protocol:
 *
 *   stdin  {"cmd":"watch","type":URL} | {"cmd":"storm"} | {"cmd":"exit"}
 *   stdout {"event":"ready"} | {"event":"watching"} | {"event":"got","at":[ms...],"bytes":[...]}
 *
 * Usage: node --import tsx bench/lib/trickle-fanout.ts --target HOST:PORT --n N [--route NAME]
 */
import * as grpc from '@grpc/grpc-js';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { lookupType } from '../../src/xds/proto-root.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import { rawAdsClient } from '../../test/helpers/raw-ads.ts';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    n: { type: 'string', default: '100' },
    route: { type: 'string', default: 'edge-0' },
  },
});
const target = values.target!;
const count = Number(values.n);
const routeName = values.route;

const Ads = rawAdsClient(false);
const Cluster = lookupType('envoy.config.cluster.v3.Cluster');
const BIT: Record<string, number> = {
  [TypeUrls.cluster]: 1,
  [TypeUrls.endpoint]: 2,
  [TypeUrls.listener]: 4,
  [TypeUrls.route]: 8,
};

interface DecodedResponse {
  version_info: string;
  type_url: string;
  nonce: string;
  resources: { type_url: string; value: Uint8Array }[];
}

const emit = (v: object) => process.stdout.write(`${JSON.stringify(v)}\n`);

/** "" when not watching; "*" during a storm (every type again). */
let watchType = '';
let pending = 0;
let readyLeft = count;

class SimulatedProxy {
  gotAt = 0;
  bytes = 0;
  /** Types seen since the last reset (a storm waits for all four). */
  seen = 0;
  private ready = false;
  private stopped = false;
  private client?: grpc.Client;
  private call?: grpc.ClientDuplexStream<object, unknown>;

  constructor(private readonly id: number) {}

  start(): void {
    this.stopped = false;
    const client = new Ads(target, grpc.credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
      'grpc.max_receive_message_length': -1,
    });
    this.client = client;
    const call = client.S();
    this.call = call;
    call.on('error', () => {});
    const names: Record<string, string[]> = { [TypeUrls.route]: [routeName] };
    let got = 0;
    call.write({ node: { id: `peer-${this.id}`, cluster: 'bench' }, type_url: TypeUrls.cluster });
    call.write({ type_url: TypeUrls.listener });
    call.write({ type_url: TypeUrls.route, resource_names: names[TypeUrls.route] });
    call.on('data', ({ msg, size }: { msg: DecodedResponse; size: number }) => {
      const resp = msg;
      this.bytes += size;
      const t = resp.type_url;
      call.write({
        type_url: t,
        version_info: resp.version_info,
        response_nonce: resp.nonce,
        resource_names: names[t],
      });
      if (t === TypeUrls.cluster && !names[TypeUrls.endpoint]) {
        names[TypeUrls.endpoint] = resp.resources.map(
          (a) => (Cluster.decode(a.value) as unknown as { name: string }).name,
        );
        call.write({ type_url: TypeUrls.endpoint, resource_names: names[TypeUrls.endpoint] });
      }
      got |= BIT[t] ?? 0;
      if (got === 15 && !this.ready) {
        this.ready = true;
        if (--readyLeft === 0) emit({ event: 'ready' });
      }
      this.observe(t);
    });
    // As Envoy does: a stream that failed is opened again (not one stopped for a storm).
    call.on('close', () => {
      if (this.client === client && !this.stopped) {
        client.close();
        setTimeout(() => this.start(), 100);
      }
    });
  }

  stop(): void {
    this.stopped = true;
    this.call?.cancel();
    this.client?.close();
  }

  private observe(t: string): void {
    if (watchType === '' || this.gotAt !== 0) return;
    if (watchType === '*') {
      this.seen |= BIT[t] ?? 0;
      if (this.seen !== 15) return;
    } else if (t !== watchType) return;
    this.gotAt = Date.now();
    if (--pending === 0) report();
  }
}

const proxies = Array.from({ length: count }, (_, i) => new SimulatedProxy(i));

function report(): void {
  watchType = '';
  emit({ event: 'got', at: proxies.map((p) => p.gotAt), bytes: proxies.map((p) => p.bytes) });
}

function reset(w: string): void {
  for (const p of proxies) [p.gotAt, p.bytes, p.seen] = [0, 0, 0];
  pending = proxies.length;
  watchType = w;
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const c = JSON.parse(line) as { cmd: string; type?: string };
  if (c.cmd === 'watch') {
    reset(c.type!);
    emit({ event: 'watching' });
  } else if (c.cmd === 'storm') {
    for (const p of proxies) p.stop();
    reset('*');
    readyLeft = Number.POSITIVE_INFINITY; // no "ready" during a storm
    for (const p of proxies) p.start();
  } else if (c.cmd === 'exit') process.exit(0);
});

void (async () => {
  for (const [i, p] of proxies.entries()) {
    p.start();
    if (i % 100 === 99) await new Promise((r) => setTimeout(r, 20)); // do not flood the listen backlog
  }
})();
