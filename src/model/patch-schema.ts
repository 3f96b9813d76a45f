/**
 * `EnvoyPatch`: a change to the Envoy resources fleetxds generates, for what the model does not
 * name. One form per document: a JSON merge patch (RFC 7386), a JSON patch (RFC 6902, with `test`),
 * or filters added at a stated position.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Enum, Name, strict } from '../features/kit/schema-primitives.ts';

const Json = Type.Unknown();

const FilterAdd = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 256, description: 'The filter name, e.g. envoy.filters.http.lua.' }),
    typedConfig: Type.Record(Type.String(), Json, {
      description: "Its typed_config, with '@type': the filter's Envoy config message, in proto3 JSON.",
    }),
    before: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Before this filter.' })),
    after: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'After this filter.' })),
  },
  strict,
);

export const PATCH_TARGET_KINDS = ['listener', 'route', 'virtualHost', 'cluster', 'endpoint'] as const;

export const EnvoyPatch = Type.Object(
  {
    kind: Type.Literal('EnvoyPatch'),
    name: Name,
    description: Type.Optional(Type.String({ maxLength: 4096 })),
    groups: Type.Optional(
      Type.Array(Name, {
        minItems: 1,
        uniqueItems: true,
        description: 'Node groups whose resources are patched (default: every group).',
      }),
    ),
    target: Type.Object(
      {
        kind: Enum(PATCH_TARGET_KINDS, 'route is a route configuration; virtualHost one of its virtual hosts.'),
        name: Type.String({
          minLength: 1,
          maxLength: 256,
          description: 'The resource name, or a glob (* and ?) over names.',
        }),
      },
      strict,
    ),
    merge: Type.Optional(
      Type.Record(Type.String(), Json, {
        description: 'A JSON merge patch (RFC 7386) on the resource: objects merge, null removes, the rest replaces.',
      }),
    ),
    jsonPatch: Type.Optional(
      Type.Array(
        Type.Object(
          {
            op: Enum(['add', 'remove', 'replace', 'move', 'copy', 'test'] as const),
            path: Type.String({ maxLength: 1024, description: 'A JSON pointer, e.g. /circuit_breakers/thresholds/0.' }),
            from: Type.Optional(Type.String({ maxLength: 1024 })),
            value: Type.Optional(Json),
          },
          strict,
        ),
        { minItems: 1, maxItems: 256, description: 'An RFC 6902 JSON patch: every operation applies, or none.' },
      ),
    ),
    filters: Type.Optional(
      Type.Object(
        {
          http: Type.Optional(
            Type.Array(FilterAdd, {
              minItems: 1,
              description: "HTTP filters added to the listener's connection managers (default: before the router).",
            }),
          ),
          network: Type.Optional(
            Type.Array(FilterAdd, {
              minItems: 1,
              description: "Network filters added to the listener's filter chains (default: first).",
            }),
          ),
        },
        { ...strict, description: 'Filters added to listeners (target kind listener).' },
      ),
    ),
    allowControlPlaneChanges: Type.Optional(
      Type.Boolean({
        description:
          'Let the patch change how proxies reach fleetxds (config sources); refused otherwise, since a mistake ' +
          'there cuts proxies off from every later fix.',
      }),
    ),
  },
  { ...strict, description: 'A change to generated Envoy resources: one of merge, jsonPatch and filters.' },
);

export type EnvoyPatchDoc = Static<typeof EnvoyPatch>;
