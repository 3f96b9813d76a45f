/** Outlier detection in the YAML model: endpoints ejected for the errors they answer with. */
import { Type, type Static } from '@sinclair/typebox';
import { Duration, PositiveInt, strict } from '../kit/schema-primitives.ts';

export const OutlierDetection = Type.Object(
  {
    consecutive5xx: Type.Optional(PositiveInt),
    consecutiveGatewayFailure: Type.Optional(PositiveInt),
    interval: Type.Optional(Duration),
    baseEjectionTime: Type.Optional(Duration),
    maxEjectionPercent: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    maxEjectionTime: Type.Optional(Duration),
    successRate: Type.Optional(
      Type.Object(
        {
          minimumHosts: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, description: 'Default 5.' })),
          requestVolume: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000000, description: 'Default 100.' })),
          stdevFactor: Type.Optional(
            Type.Number({
              exclusiveMinimum: 0,
              maximum: 100,
              description: 'Ejected below mean - factor x stdev (1.9).',
            }),
          ),
          enforcingPercent: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'Default 100.' })),
        },
        { ...strict, description: "Eject hosts whose success rate is far below the others' (gRPC honours it)." },
      ),
    ),
    failurePercentage: Type.Optional(
      Type.Object(
        {
          threshold: Type.Integer({ minimum: 0, maximum: 100, description: 'Eject at this failure percentage (85).' }),
          minimumHosts: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, description: 'Default 5.' })),
          requestVolume: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000000, description: 'Default 50.' })),
          enforcingPercent: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'Default 100.' })),
        },
        { ...strict, description: 'Eject hosts failing at least this share of requests (gRPC honours it).' },
      ),
    ),
  },
  strict,
);

export type OutlierDetectionDoc = Static<typeof OutlierDetection>;

export const outlierDetectionFields = { service: { outlierDetection: Type.Optional(OutlierDetection) } } as const;

export interface OutlierDetectionService {
  readonly outlierDetection?: OutlierDetectionDoc;
}
