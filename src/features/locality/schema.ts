/**
 * Locality in the YAML model: how a service's endpoints in several regions, zones and sub-zones
 * share its callers' traffic (nearest first with failover by distance, or operator weights).
 */
import { Type, type Static } from '@sinclair/typebox';
import { strict } from '../kit/schema-primitives.ts';

/** The longest region, zone or sub-zone name a node or an endpoint may carry. */
export const MAX_LOCALITY_NAME = 128;

/** A region, zone or sub-zone name, of a node or an endpoint. */
export const LocalityName = Type.String({ minLength: 1, maxLength: MAX_LOCALITY_NAME });

export const LocalityWeight = Type.Object(
  {
    region: Type.Optional(LocalityName),
    zone: Type.Optional(LocalityName),
    subZone: Type.Optional(LocalityName),
    weight: Type.Integer({
      minimum: 1,
      maximum: 1000000,
      description: 'The share of traffic, relative to the others.',
    }),
  },
  {
    ...strict,
    description:
      'The weight of the endpoints in one locality: an entry applies to the localities whose every field it ' +
      'names is equal (the first entry that applies wins).',
  },
);

/** Nodes by where they run (node groups, rollout stages): each field given must equal the node's. */
export const LocalitySelect = Type.Object(
  { region: Type.Optional(LocalityName), zone: Type.Optional(LocalityName), subZone: Type.Optional(LocalityName) },
  {
    ...strict,
    minProperties: 1,
    description:
      "The node's locality (node.locality, fleetxds bootstrap --region/--zone/--sub-zone): each field " +
      'given must be equal.',
  },
);
export type LocalitySelectDoc = Static<typeof LocalitySelect>;

/**
 * Whether a locality is one `select` names: each field `select` gives is equal (a node group or
 * rollout stage selecting nodes, a weight applying to endpoints). Nothing declared: in none.
 */
export function localitySelects(
  select: LocalitySelectDoc,
  l: { readonly region?: string; readonly zone?: string; readonly subZone?: string } | undefined,
): boolean {
  return (
    !!l &&
    (select.region === undefined || select.region === l.region) &&
    (select.zone === undefined || select.zone === l.zone) &&
    (select.subZone === undefined || select.subZone === l.subZone)
  );
}

/** Envoy's own zone-aware routing, for callers whose node group names its workload (the local cluster). */
export const ZoneAware = Type.Object(
  {
    minClusterSize: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100000,
        description:
          'Fewer endpoints than this and the service is balanced over every zone alike (Envoy: 6). Counts the ' +
          'endpoints of all zones.',
      }),
    ),
    routingEnabled: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 100,
        description: 'The percentage of requests zone-aware routing decides (the rest: every zone alike). Default 100.',
      }),
    ),
  },
  {
    ...strict,
    description:
      "Envoy's zone-aware routing for this service: each caller sends as much traffic to its own zone as keeps " +
      "every endpoint equally loaded, judged by the share of the caller's workload (NodeGroup.workload) and of " +
      'this service in that zone. A proxy whose group names its workload routes every service by zone (Envoy ' +
      'default); this tunes it, or turns it off (routingEnabled: 0). Envoy only.',
  },
);
export type ZoneAwareDoc = Static<typeof ZoneAware>;

export const localityFields = {
  service: {
    locality: Type.Optional(
      Type.Object(
        {
          failover: Type.Optional(
            Type.Boolean({
              description:
                'Nearest first: each caller is served the endpoints ordered by distance from its own locality ' +
                '(same sub-zone, same zone, same region, the rest), as priorities; when the nearest ones fail ' +
                'health checks or drain, traffic moves to the next. Envoy and gRPC clients alike.',
            }),
          ),
          weights: Type.Optional(
            Type.Array(LocalityWeight, {
              minItems: 1,
              maxItems: 256,
              description:
                'Locality-weighted balancing: traffic is shared between localities (of one priority) by these ' +
                'weights, whatever their endpoint counts. A locality no entry names gets weight 1.',
            }),
          ),
          zoneAware: Type.Optional(ZoneAware),
        },
        { ...strict, description: 'Where traffic to this service goes, by the locality of caller and endpoint.' },
      ),
    ),
  },
} as const;

export type LocalityDoc = Static<(typeof localityFields.service)['locality']>;
export type LocalityWeightDoc = Static<typeof LocalityWeight>;

/** What locality reads of a service: its own field and where its endpoints are. */
export interface LocalityService {
  readonly locality?: LocalityDoc;
  readonly endpoints?: readonly {
    readonly region?: string;
    readonly zone?: string;
    readonly subZone?: string;
    readonly priority?: number;
  }[];
  readonly registration?: unknown;
  readonly dns?: unknown;
  /** Zone-aware routing is Envoy's for its default policies (round robin, least request, random). */
  readonly lb?: string;
}
