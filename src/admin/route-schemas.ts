/**
 * The admin API's request schemas (TypeBox), and how a request that fails one is refused: with the
 * message and code its schema names, from the one catalogue of refusals (shared/errors.ts).
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyServerOptions } from 'fastify';
import { ErrorCodes, FleetError, type ErrorCode } from '../shared/errors.ts';
import { RESOURCE_KINDS } from '../xds/resource-types.ts';
import { NODE_STATES } from './node-state.ts';

/** A config version id as text: digits only, short enough to stay a safe integer. */
export const VERSION_ID = /^[0-9]{1,15}$/;
const MAX_ACTOR_LENGTH = 200;
/** Names in paths and filters: a node id, a group, a free-text filter. */
const MAX_NAME_LENGTH = 1024;

/** A schema's refusal: what the caller is told when a value fails it, and with which code. */
function refused<T extends TSchema>(schema: T, errorMessage: string, errorCode: ErrorCode = ErrorCodes.BAD_REQUEST): T {
  return Object.assign(schema, { errorMessage, errorCode });
}

const name = () => Type.String({ maxLength: MAX_NAME_LENGTH });
const text = () => Type.Optional(Type.String({ maxLength: MAX_NAME_LENGTH }));
/** A count in a query (limit, offset): read leniently by the route, bounded in length here. */
const count = () => Type.Optional(Type.String({ maxLength: 20 }));

const versionIdValue = refused(
  Type.Union([
    Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }),
    Type.String({ pattern: VERSION_ID.source }),
  ]),
  'versionId must be a whole number',
);

/** An operator decision's body: each field of its one accepted type. No body counts as `{}`. */
export const DecisionBody = refused(
  Type.Object({
    versionId: Type.Optional(versionIdValue),
    actor: Type.Optional(
      refused(
        Type.String({ maxLength: MAX_ACTOR_LENGTH }),
        `actor must be a string of at most ${MAX_ACTOR_LENGTH} characters`,
      ),
    ),
  }),
  'the body must be a JSON object',
);
export interface DecisionBody {
  versionId?: number | string;
  actor?: string;
}

export const GroupParams = Type.Object({ group: name() });
export const NodeParams = Type.Object({ id: name() });

export const RolloutCommandParams = Type.Object({
  command: refused(
    Type.Union([Type.Literal('promote'), Type.Literal('halt'), Type.Literal('resume'), Type.Literal('abort')]),
    'command must be promote, halt, resume or abort',
    ErrorCodes.NOT_FOUND,
  ),
});

const kindOf = <K extends string>(kinds: readonly K[]) =>
  refused(
    Type.Union(kinds.map((k) => Type.Literal(k))),
    `kind must be one of ${kinds.join(', ')}`,
    ErrorCodes.NOT_FOUND,
  );

export const GroupResourcesParams = Type.Object({ group: name(), kind: kindOf(RESOURCE_KINDS) });

const versionInPath = () =>
  refused(Type.String({ pattern: VERSION_ID.source }), 'unknown version', ErrorCodes.UNKNOWN_VERSION);

export const DiffParams = Type.Object({ a: versionInPath(), b: versionInPath() });

export const ResourceDiffParams = Type.Object({
  a: versionInPath(),
  b: versionInPath(),
  group: name(),
  kind: refused(
    kindOf(RESOURCE_KINDS.filter((k) => k !== 'secret')),
    `kind must be one of ${RESOURCE_KINDS.filter((k) => k !== 'secret').join(', ')} (secrets are never shown)`,
    ErrorCodes.BAD_REQUEST,
  ),
  name: name(),
});

export const LimitQuery = Type.Object({ limit: count() });

export const NodesQuery = Type.Object({ limit: count(), offset: count(), local: text() });

export const ExplainQuery = Type.Object({
  type: Type.Optional(
    refused(Type.Union(RESOURCE_KINDS.map((k) => Type.Literal(k))), `type must be one of ${RESOURCE_KINDS.join(', ')}`),
  ),
});

export const FleetNodesQuery = Type.Object({
  // A search of any length is taken (the node list reads its first characters); the request line's
  // own bound (Node's header size) bounds it.
  q: Type.Optional(Type.String()),
  group: text(),
  state: Type.Optional(
    refused(Type.Union(NODE_STATES.map((s) => Type.Literal(s))), `state must be one of ${NODE_STATES.join(', ')}`),
  ),
  transport: text(),
  client: text(),
  version: Type.Optional(
    refused(Type.String({ pattern: `^(${VERSION_ID.source.slice(1, -1)})?$` }), 'version must be a version id'),
  ),
  offset: count(),
  limit: count(),
});

interface SchemaError {
  instancePath: string;
  message?: string;
  parentSchema?: { errorMessage?: string; errorCode?: ErrorCode };
}

/**
 * The refusal for a request that fails its schema: the message of the innermost schema that names
 * one (a field's before its object's), else what the validator says of the value.
 */
export function schemaRefusal(errors: readonly SchemaError[], part: string): FleetError {
  const named = errors
    .filter((e) => e.parentSchema?.errorMessage)
    .sort((a, b) => b.instancePath.length - a.instancePath.length)[0];
  if (named)
    return new FleetError(named.parentSchema!.errorCode ?? ErrorCodes.BAD_REQUEST, named.parentSchema!.errorMessage!);
  const first = errors[0];
  return new FleetError(
    ErrorCodes.BAD_REQUEST,
    `${part}${first?.instancePath ?? ''} ${first?.message ?? 'is not valid'}`,
  );
}

/**
 * The validator's settings: no type coercion (a versionId of `[5]` is refused, not unwrapped), the
 * failing schema given with each error (for its message), and the two keywords that carry it.
 */
export const ADMIN_AJV: FastifyServerOptions['ajv'] = {
  customOptions: { coerceTypes: false, verbose: true, keywords: ['errorMessage', 'errorCode'] },
};
