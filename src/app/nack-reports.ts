import type { Logger } from 'pino';
import { LineBudget } from '../shared/line-budget.ts';
import type { NackReport } from '../status/node-registry.ts';
import type { Stores } from '../store/database.ts';

/** NACK lines written to the log per minute at most (each is in the NACK log too). */
const NACK_LINES_PER_MINUTE = 60;

/**
 * Where a NACK goes: every one to the rollout's gates (`gates`); the ones the registry marks to
 * report into the NACK log, and those stored into the server's log, within a line budget.
 */
export function nackReports(stores: Stores, log: Logger, gates: (n: NackReport) => void): (n: NackReport) => void {
  const lines = new LineBudget(NACK_LINES_PER_MINUTE, 60_000);
  return (n) => {
    gates(n);
    if (!n.report) return;
    const stored = stores.nacks.record({
      at: n.at,
      nodeId: n.stream.nodeId,
      nodeCluster: n.stream.nodeCluster,
      nodeGroup: n.stream.group,
      transport: n.stream.transport,
      typeUrl: n.typeUrl,
      version: n.version,
      nonce: n.nonce,
      errorCode: n.code,
      message: n.message,
    });
    const line = stored ? lines.take() : undefined;
    if (line?.allowed)
      log.warn(
        {
          node: n.stream.nodeId,
          group: n.stream.group,
          typeUrl: n.typeUrl,
          version: n.version,
          error: n.message,
          ...(line.droppedBefore ? { nackLinesDropped: line.droppedBefore } : {}),
        },
        'NACK',
      );
  };
}
