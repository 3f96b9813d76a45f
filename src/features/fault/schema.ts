/**
 * Fault injection in the YAML model: a virtual host or route delays or fails a share of its
 * requests at the proxy, as if the service were slow or failing, to test how callers cope.
 */
import { Type, type Static } from '@sinclair/typebox';
import { GRPC_STATUS_CODES } from '../kit/grpc-status.ts';
import { Duration, Enum, strict } from '../kit/schema-primitives.ts';
import { expiryFields } from '../kit/deadline.ts';

const Percent = Type.Number({ exclusiveMinimum: 0, maximum: 100, description: 'Share of requests, in percent.' });

export const Fault = Type.Object(
  {
    delay: Type.Optional(
      Type.Object(
        { fixed: Duration, percent: Percent },
        { ...strict, description: 'Hold a share of requests this long before forwarding them.' },
      ),
    ),
    abort: Type.Optional(
      Type.Object(
        {
          status: Type.Optional(
            Type.Integer({ minimum: 200, maximum: 599, description: 'The HTTP status the proxy answers.' }),
          ),
          grpcStatus: Type.Optional(
            Enum(
              Object.keys(GRPC_STATUS_CODES) as (keyof typeof GRPC_STATUS_CODES)[],
              'The gRPC status the proxy answers a gRPC request with (HTTP 200, grpc-status).',
            ),
          ),
          percent: Percent,
        },
        {
          ...strict,
          description:
            'Answer a share of requests with this status (one of status, grpcStatus), without forwarding them.',
        },
      ),
    ),
    headerControlled: Type.Optional(
      Type.Boolean({
        description:
          "The client chooses: Envoy's x-envoy-fault-abort-request, x-envoy-fault-delay-request (and their " +
          '-percentage) headers inject the fault they name. Only for callers trusted to test with it; instead of ' +
          'delay and abort.',
      }),
    ),
    maxActive: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1000000,
        description: 'At most this many requests delayed or failed at once per proxy (the rest pass untouched).',
      }),
    ),
    ...expiryFields,
  },
  {
    ...strict,
    description:
      'Delay or fail a share of the requests at the proxy, to test how callers cope: delay, abort or both, or ' +
      'headerControlled. A route sets its own or `false` (none of its virtual host). With until or for, a ' +
      'fault window: removed at the deadline, and dropped by the proxies themselves if fleetxds is gone.',
  },
);
export type FaultDoc = Static<typeof Fault>;

const FaultSetting = Type.Union([Fault, Type.Literal(false)]);

export const faultFields = {
  virtualHost: { fault: Type.Optional(Fault) },
  route: { fault: Type.Optional(FaultSetting) },
} as const;

export interface FaultRoute {
  readonly fault?: FaultDoc | false;
}

export interface FaultVirtualHost {
  readonly fault?: FaultDoc;
  readonly routes: readonly FaultRoute[];
}
