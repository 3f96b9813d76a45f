/**
 * Node metadata by which a REST proxy opts into long polling: `{fleetxds: {long_poll_ms: N}}`
 * promises that its request_timeout exceeds N, so the server may hold an unchanged poll up to N ms.
 * Without it a poll is answered at once (Envoy's default request_timeout is 1 s).
 */
export const LONG_POLL_METADATA = { namespace: 'fleetxds', field: 'long_poll_ms' } as const;

export function longPollMs(metadata: Record<string, unknown> | undefined): number {
  const ns = metadata?.[LONG_POLL_METADATA.namespace];
  const v = ns && typeof ns === 'object' ? (ns as Record<string, unknown>)[LONG_POLL_METADATA.field] : undefined;
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
}
