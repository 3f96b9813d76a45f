/**
 * gRPC status names and their codes (1-16), as faults abort with them: a gRPC route's for
 * proxyless clients, and an Envoy route's that fronts a gRPC service.
 */
export const GRPC_STATUS_CODES = {
  cancelled: 1,
  unknown: 2,
  'invalid-argument': 3,
  'deadline-exceeded': 4,
  'not-found': 5,
  'already-exists': 6,
  'permission-denied': 7,
  'resource-exhausted': 8,
  'failed-precondition': 9,
  aborted: 10,
  'out-of-range': 11,
  unimplemented: 12,
  internal: 13,
  unavailable: 14,
  'data-loss': 15,
  unauthenticated: 16,
} as const;
