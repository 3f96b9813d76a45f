/** Request mirroring in Envoy's terms: a route's request mirror policies. */
import type { MirrorDoc } from '../model/traffic-schema.ts';
import { compact, perMillion, type JsonObject } from '../features/kit/envoy-json.ts';

export function mirrorPolicies(m: MirrorDoc | undefined): JsonObject[] | undefined {
  return m?.map((t) =>
    compact({
      cluster: t.to,
      runtime_fraction:
        t.percent === undefined || t.percent === 100 ? undefined : { default_value: perMillion(t.percent) },
    }),
  );
}
