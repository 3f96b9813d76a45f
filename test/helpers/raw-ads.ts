/**
 * A lean ADS client for load generators and tests that open many streams: requests encoded from
 * plain objects, responses decoded to protobufjs messages (snake_case fields) with their size.
 * No JSON conversion, unlike the scripted client in ads-client.ts.
 */
import * as grpc from '@grpc/grpc-js';
import { lookupType } from '../../src/xds/proto-root.ts';
import {
  DELTA_DISCOVERY_REQUEST,
  DELTA_DISCOVERY_RESPONSE,
  DISCOVERY_REQUEST,
  DISCOVERY_RESPONSE,
} from '../../src/xds/resource-types.ts';

export interface RawResponse {
  msg: Record<string, any>;
  size: number;
}

export type RawAdsClient = grpc.Client & { S: () => grpc.ClientDuplexStream<object, RawResponse> };

/** A client constructor for one ADS stream method: SotW (StreamAggregatedResources) or delta. */
export function rawAdsClient(
  delta = false,
): new (target: string, credentials: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => RawAdsClient {
  const Req = lookupType(delta ? DELTA_DISCOVERY_REQUEST : DISCOVERY_REQUEST);
  const Res = lookupType(delta ? DELTA_DISCOVERY_RESPONSE : DISCOVERY_RESPONSE);
  const method = {
    path: `/envoy.service.discovery.v3.AggregatedDiscoveryService/${delta ? 'Delta' : 'Stream'}AggregatedResources`,
    requestStream: true,
    responseStream: true,
    requestSerialize: (v: object) => Buffer.from(Req.encode(Req.fromObject(v)).finish()),
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer): RawResponse => ({
      msg: Res.decode(b),
      size: b.length,
    }),
  };
  return grpc.makeGenericClientConstructor({ S: method }, 'ADS') as never;
}
