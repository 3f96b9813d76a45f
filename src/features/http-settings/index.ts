/** An HTTP listener's connection-manager settings: client addresses, timeouts, limits, paths, HTTP/2, HTTP/1.1. */
import { Codes } from '../../shared/diagnostics.ts';
import { defineFeature } from '../kit/feature.ts';
import { httpSettingsFields, type HttpSettingsListener } from './schema.ts';
import { httpSettingsFields as connectionManagerFields } from './translate.ts';

export const httpSettings = defineFeature<HttpSettingsListener, unknown, unknown, unknown, typeof httpSettingsFields>({
  name: 'http-settings',
  docs: 'configuration.md#http-settings',
  fields: httpSettingsFields,
  grpc: { kind: 'envoy-only', why: "settings of Envoy's connection manager; gRPC applications use their own channels" },
  checks: {
    listener: (l, c) => {
      if (l.http && !l.virtualHosts)
        c.error(Codes.INVALID_VALUE, ['http'], 'http settings are for HTTP listeners: this one has no virtualHosts');
      const h2 = l.http?.http2;
      if (
        h2?.initialStreamWindowSize !== undefined &&
        h2.initialConnectionWindowSize !== undefined &&
        h2.initialConnectionWindowSize < h2.initialStreamWindowSize
      )
        c.error(
          Codes.INVALID_VALUE,
          ['http', 'http2', 'initialConnectionWindowSize'],
          'the connection window must be at least the stream window',
        );
    },
  },
  connectionManager: (l) => connectionManagerFields(l.http),
});
