/**
 * System errors: what fleetxds refuses at run time (as opposed to the FXDS_* diagnostics of a
 * config tree). Each has a stable code that scripts and tests can match, and one table says how
 * each transport reports it: the HTTP status of the admin and REST APIs, the gRPC status name.
 */
export const ErrorCodes = {
  /** A config version that does not exist, or has no stored resources. */
  UNKNOWN_VERSION: 'FXDS_UNKNOWN_VERSION',
  /** A node group that exists neither now nor in the version named. */
  UNKNOWN_GROUP: 'FXDS_UNKNOWN_GROUP',
  /** Unpinning a group that is not pinned. */
  NOT_PINNED: 'FXDS_NOT_PINNED',
  /** A rollout command while no rollout is under way. */
  NO_ROLLOUT: 'FXDS_NO_ROLLOUT',
  /** A rollout command its state does not allow (promote a halted rollout, resume a progressing one). */
  ROLLOUT_STATE: 'FXDS_ROLLOUT_STATE',
  /** A request that breaks the xDS protocol or our limits (missing node, wrong type for the service...). */
  BAD_REQUEST: 'FXDS_BAD_REQUEST',
  /** What the client asked for is not for it (node identity not allowed, secrets without authentication). */
  FORBIDDEN: 'FXDS_FORBIDDEN',
  /** A registration for a service that takes none, or an endpoint that is not registered. */
  NOT_REGISTERED: 'FXDS_NOT_REGISTERED',
  /** A decision that must reach every replica while the shared store (PostgreSQL) is unreachable. */
  SHARED_UNAVAILABLE: 'FXDS_SHARED_UNAVAILABLE',
  /** A node id no stream, poll or NACK of this replica knows. */
  UNKNOWN_NODE: 'FXDS_UNKNOWN_NODE',
  /** Something else the request names does not exist (a path, a kind, a rejected tree, the metrics). */
  NOT_FOUND: 'FXDS_NOT_FOUND',
  /** No config version is applied yet: nothing to show or explain. */
  NOT_READY: 'FXDS_NOT_READY',
  /** The API requires a bearer token and none (or an unknown one) came. */
  UNAUTHENTICATED: 'FXDS_UNAUTHENTICATED',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** gRPC status names (keys of grpc-js `status`), so this folder needs no transport library. */
export type GrpcStatusName =
  'INVALID_ARGUMENT' | 'NOT_FOUND' | 'PERMISSION_DENIED' | 'FAILED_PRECONDITION' | 'UNAVAILABLE' | 'UNAUTHENTICATED';

export const ERROR_STATUS: Readonly<Record<ErrorCode, { http: number; grpc: GrpcStatusName }>> = {
  FXDS_UNKNOWN_VERSION: { http: 404, grpc: 'NOT_FOUND' },
  FXDS_UNKNOWN_GROUP: { http: 404, grpc: 'NOT_FOUND' },
  FXDS_NOT_PINNED: { http: 404, grpc: 'NOT_FOUND' },
  FXDS_NO_ROLLOUT: { http: 404, grpc: 'NOT_FOUND' },
  FXDS_ROLLOUT_STATE: { http: 409, grpc: 'FAILED_PRECONDITION' },
  FXDS_BAD_REQUEST: { http: 400, grpc: 'INVALID_ARGUMENT' },
  FXDS_FORBIDDEN: { http: 403, grpc: 'PERMISSION_DENIED' },
  FXDS_SHARED_UNAVAILABLE: { http: 503, grpc: 'UNAVAILABLE' },
  FXDS_NOT_REGISTERED: { http: 404, grpc: 'NOT_FOUND' },
  FXDS_UNKNOWN_NODE: { http: 404, grpc: 'NOT_FOUND' },
  FXDS_NOT_FOUND: { http: 404, grpc: 'NOT_FOUND' },
  FXDS_NOT_READY: { http: 503, grpc: 'UNAVAILABLE' },
  FXDS_UNAUTHENTICATED: { http: 401, grpc: 'UNAUTHENTICATED' },
};

export class FleetError extends Error {
  override readonly name = 'FleetError';

  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }

  get httpStatus(): number {
    return ERROR_STATUS[this.code].http;
  }

  get grpcStatus(): GrpcStatusName {
    return ERROR_STATUS[this.code].grpc;
  }
}
