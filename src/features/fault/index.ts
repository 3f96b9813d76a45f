/**
 * Fault injection for Envoy routes: a share of requests delayed or answered with an error status
 * at the proxy. Proxyless gRPC clients have their own (GrpcService routes' `fault`, gRFC A33).
 */
import { Codes } from '../../shared/diagnostics.ts';
import { checkDeadline } from '../kit/deadline.ts';
import { defineFeature, type FeatureCheck } from '../kit/feature.ts';
import { faultFields, type FaultDoc, type FaultRoute, type FaultVirtualHost } from './schema.ts';
import { faultFilters, faultPerFilterConfig } from './translate.ts';

function checkFault(f: FaultDoc | false | undefined, path: readonly (string | number)[], c: FeatureCheck): void {
  if (!f) return;
  const at = [...path, 'fault'];
  checkDeadline(f, at, c);
  if (f.headerControlled && (f.delay || f.abort))
    c.error(
      Codes.CONFLICT,
      [...at, 'headerControlled'],
      "a header-controlled fault takes its delay and status from the client's headers: drop delay and abort",
    );
  else if (!f.delay && !f.abort && !f.headerControlled)
    c.error(Codes.INVALID_VALUE, at, 'a fault injects a delay, an abort or both, or is headerControlled: give one');
  if (f.abort && (f.abort.status === undefined) === (f.abort.grpcStatus === undefined))
    c.error(
      Codes.INVALID_VALUE,
      [...at, 'abort'],
      'an abort answers with one of status (HTTP) and grpcStatus (a gRPC request): give one',
    );
}

export const fault = defineFeature<unknown, FaultVirtualHost, FaultRoute, unknown, typeof faultFields>({
  name: 'fault',
  docs: 'configuration.md#fault-injection',
  fields: faultFields,
  grpc: {
    kind: 'envoy-only',
    why: "gRPC applications take faults from their GrpcService routes' own `fault` (gRFC A33)",
  },
  checks: {
    virtualHost: (v, c) => checkFault(v.fault, [], c),
    route: (r, path, c) => checkFault(r.fault, path, c),
  },
  http: {
    // The stand-in for a slow or failing service: last before the router, after who may call.
    phase: 'response',
    filters: (_l, vhosts) => faultFilters(vhosts),
    perFilterConfig: (o) => faultPerFilterConfig(o),
  },
});
