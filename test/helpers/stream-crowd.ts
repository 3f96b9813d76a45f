/**
 * Many SotW ADS streams from one process, for tests of what the server shows at fleet scale (the
 * status page at 5,000 streams): each its own HTTP/2 connection on bare node:http2, subscribing to
 * clusters and listeners. Node `<prefix>-<i>` ACKs every response, except that every 100th NACKs
 * its clusters and every 50th (offset 1) never answers its listeners (it stays behind). Prints
 * `ready` once every stream has its clusters. A load generator, not a proxy double.
 *
 * Usage: node --import tsx test/helpers/stream-crowd.ts PORT COUNT PREFIX
 */
import { connect } from 'node:http2';
import { lookupType } from '../../src/xds/proto-root.ts';
import { DISCOVERY_REQUEST, TypeUrls } from '../../src/xds/resource-types.ts';
import { adsRequest, grpcFrame, readResponses } from './h2-ads.ts';

const [port, count, prefix] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]!];
const Request = lookupType(DISCOVERY_REQUEST);
const framed = (request: object) => grpcFrame(Request.encode(Request.fromObject(request)).finish());

let waiting = count;

function open(i: number): void {
  const session = connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  const call = adsRequest(session);
  const nacks = i % 100 === 0;
  const silentOnListeners = i % 50 === 1;
  let counted = false;
  call.write(
    framed({
      node: {
        id: `${prefix}-${i}`,
        cluster: 'crowd',
        user_agent_name: 'envoy',
        user_agent_version: i % 3 ? '1.40.0' : '1.36.2',
      },
      type_url: TypeUrls.cluster,
    }),
  );
  call.write(framed({ type_url: TypeUrls.listener }));
  readResponses(call, (r) => {
    const t = r.type_url;
    if (t === TypeUrls.listener && silentOnListeners) return;
    const nack = nacks && t === TypeUrls.cluster;
    call.write(
      framed({
        type_url: t,
        response_nonce: r.nonce,
        ...(nack
          ? { error_detail: { code: 13, message: `crowd node ${i} refuses clusters` } }
          : { version_info: r.version_info }),
      }),
    );
    if (t === TypeUrls.cluster && !counted) {
      counted = true;
      if (--waiting === 0) console.log('ready');
    }
  });
}

void (async () => {
  for (let i = 0; i < count; i++) {
    open(i);
    if (i % 200 === 199) await new Promise((r) => setTimeout(r, 20)); // do not flood the listen backlog
  }
})();
