/**
 * WebSocket upgrades: on for an HTTP listener unless it says `websocket: false`; a route turns them
 * off, or on under a listener that has them off. Envoy lets a route override only upgrade types its
 * connection manager lists, so the listener always lists websocket (disabled when off).
 */
import { Type } from '@sinclair/typebox';
import { Codes } from '../../shared/diagnostics.ts';
import { defineFeature } from '../kit/feature.ts';

export const websocketFields = {
  listener: {
    websocket: Type.Optional(
      Type.Boolean({
        description: 'HTTP: WebSocket upgrades (default true); a route may turn them off, or on when this is false.',
      }),
    ),
  },
  route: {
    websocket: Type.Optional(
      Type.Boolean({ description: "WebSocket upgrades on this route (default: the listener's websocket)." }),
    ),
  },
} as const;

interface WebsocketListener {
  readonly websocket?: boolean;
  readonly tcp?: unknown;
}
interface WebsocketRoute {
  readonly websocket?: boolean;
  readonly to?: string;
  readonly split?: readonly unknown[];
}

export const websocket = defineFeature<WebsocketListener, unknown, WebsocketRoute, unknown, typeof websocketFields>({
  name: 'websocket',
  docs: 'configuration.md#websocket',
  fields: websocketFields,
  grpc: { kind: 'envoy-only', why: 'gRPC runs over HTTP/2 streams; WebSocket upgrades are for proxied HTTP/1.1' },
  checks: {
    listener: (l, c) => {
      if (l.tcp && l.websocket !== undefined)
        c.error(Codes.INVALID_VALUE, ['websocket'], 'WebSocket upgrades are HTTP: a TCP listener passes any bytes');
    },
    route: (r, path, c) => {
      if (r.websocket !== undefined && r.to === undefined && r.split === undefined)
        c.error(
          Codes.INVALID_VALUE,
          [...path, 'websocket'],
          '`websocket` applies only to routes that forward (to or split)',
        );
    },
  },
  connectionManager: (l) => ({
    upgrade_configs: [{ upgrade_type: 'websocket', ...(l.websocket === false && { enabled: false }) }],
  }),
  routeAction: (r) =>
    r.websocket === undefined ? undefined : { upgrade_configs: [{ upgrade_type: 'websocket', enabled: r.websocket }] },
});
