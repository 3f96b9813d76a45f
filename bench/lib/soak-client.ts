/**
 * Soak load, one child process: waves of ADS streams that connect (each its own HTTP/2
 * connection), subscribe like Envoy (CDS/LDS wildcard, EDS for every cluster, RDS by name), ACK,
 * and are cancelled at the end of the wave. A few per wave NACK every CDS response, and a few stop
 * reading (paused) after their first response. Reports per wave over IPC.
 *   argv: port, streams per wave, wave seconds, total seconds, id prefix
 */
import * as grpc from '@grpc/grpc-js';
import { lookupType } from '../../src/xds/proto-root.ts';
import { rawAdsClient } from '../../test/helpers/raw-ads.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';

const [port, perWave, waveSeconds, totalSeconds, prefix] = [
  Number(process.argv[2]),
  Number(process.argv[3]),
  Number(process.argv[4]),
  Number(process.argv[5]),
  process.argv[6]!,
];
const T = TypeUrls;
const Cluster = lookupType('envoy.config.cluster.v3.Cluster');
const Client = rawAdsClient();

let responses = 0;
let nacks = 0;

function open(id: string, behaviour: 'ack' | 'nack' | 'stall'): () => void {
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
    'grpc.max_receive_message_length': -1,
  });
  const call = client.S();
  let edsRequested = false;
  call.on('data', ({ msg }) => {
    responses++;
    const typeUrl = msg.type_url as string;
    if (behaviour === 'stall') {
      call.pause(); // never read again: the server must not queue pushes for it without bound
      return;
    }
    const refuse = behaviour === 'nack' && typeUrl === T.cluster;
    if (refuse) nacks++;
    call.write({
      type_url: typeUrl,
      version_info: refuse ? '' : msg.version_info,
      response_nonce: msg.nonce,
      resource_names: typeUrl === T.route ? ['edge-0'] : typeUrl === T.endpoint ? eds : [],
      ...(refuse ? { error_detail: { code: 13, message: `soak: ${id} refuses this cluster set` } } : {}),
    });
    if (typeUrl === T.cluster && !edsRequested) {
      edsRequested = true;
      eds = (msg.resources as Record<string, any>[]).map(
        (r) => (Cluster.decode(r.value) as unknown as { name: string }).name,
      );
      call.write({ type_url: T.endpoint, resource_names: eds });
    }
  });
  let eds: string[] = [];
  call.on('error', () => {});
  call.write({ node: { id, cluster: 'soak' }, type_url: T.cluster });
  call.write({ type_url: T.listener });
  call.write({ type_url: T.route, resource_names: ['edge-0'] });
  return () => {
    call.cancel();
    client.close();
  };
}

void (async () => {
  const end = Date.now() + totalSeconds * 1000;
  for (let wave = 0; Date.now() < end; wave++) {
    const closers: (() => void)[] = [];
    for (let i = 0; i < perWave; i++) {
      // 2% NACK, 1% stop reading; the rest behave like Envoy.
      const behaviour = i % 100 < 2 ? 'nack' : i % 100 === 2 ? 'stall' : 'ack';
      closers.push(open(`${prefix}-w${wave}-${i}`, behaviour));
      if (i % 100 === 99) await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, Math.min(waveSeconds * 1000, Math.max(0, end - Date.now()))));
    for (const close of closers) close();
    process.send!({ type: 'wave', wave, streams: perWave, responses, nacks });
    await new Promise((r) => setTimeout(r, 500));
  }
  process.send!({ type: 'done' });
})();
