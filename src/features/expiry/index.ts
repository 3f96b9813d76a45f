/**
 * Expiring overrides: a route (a maintenance answer, a temporary redirect), a fault window or a
 * Runtime document with `until` or `for` is removed at its deadline by a version fleetxds makes
 * itself (src/model/expiry.ts decides what is due; the server applies it). This folder gives routes
 * their deadline; faults and Runtime documents take theirs from the same kit (kit/deadline.ts).
 */
import { checkDeadline, expiryFields, type Expiring } from '../kit/deadline.ts';
import { defineFeature } from '../kit/feature.ts';

export const expiry = defineFeature<unknown, unknown, Expiring, unknown, { route: typeof expiryFields }>({
  name: 'expiry',
  docs: 'configuration.md#expiring-overrides',
  fields: { route: expiryFields },
  grpc: { kind: 'envoy-only', why: 'routes of gRPC applications (GrpcService) take no deadline' },
  checks: { route: (r, path, c) => checkDeadline(r, path, c) },
});
