/**
 * ADS as gRPC over plain HTTP/2, no client library: for tests that send what a library would not
 * (streams reset at once, bytes that are not a request) or must not read.
 */
import type http2 from 'node:http2';
import { lookupType } from '../../src/xds/proto-root.ts';
import { DISCOVERY_RESPONSE } from '../../src/xds/resource-types.ts';

/** A SotW ADS stream on `session` (`headers`: more request headers, e.g. grpc-encoding). */
export function adsRequest(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders = {},
): http2.ClientHttp2Stream {
  const req = session.request({
    ':method': 'POST',
    ':path': '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
    'content-type': 'application/grpc',
    te: 'trailers',
    ...headers,
  });
  req.on('error', () => {});
  return req;
}

/** One gRPC message: the 5-byte prefix (not compressed, length) and the bytes as given. */
export function grpcFrame(message: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

export interface RawResponse {
  version_info: string;
  type_url: string;
  nonce: string;
}

/** Starts reading `req`: each DiscoveryResponse, decoded, to `onResponse` in order. */
export function readResponses(req: http2.ClientHttp2Stream, onResponse: (r: RawResponse) => void): void {
  const Res = lookupType(DISCOVERY_RESPONSE);
  let buf = Buffer.alloc(0);
  req.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
      const len = buf.readUInt32BE(1);
      onResponse(Res.toObject(Res.decode(buf.subarray(5, 5 + len))) as RawResponse);
      buf = buf.subarray(5 + len);
    }
  });
}
