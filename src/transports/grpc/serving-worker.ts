/**
 * A serving thread (see serving.ts): a gRPC server for the xDS services on the shared port, fed
 * the published configs by the main thread, its streams' reports relayed back.
 */
import { parentPort, workerData } from 'node:worker_threads';
import pino from 'pino';
import { SnapshotCache } from '../../snapshot/snapshot-cache.ts';
import { RelayedAcks, RelayRegistry } from './registry-relay.ts';
import { createGrpcServer } from './server.ts';
import type { FromThread, ThreadSettings, ToThread } from './serving.ts';
import { FeedReader } from './thread-feed.ts';

const settings = workerData as ThreadSettings;
const port = parentPort!;
const tell = (m: FromThread) => port.postMessage(m);
const log = pino({ level: settings.logLevel }).child({ component: 'grpc', thread: settings.index });

const cache = new SnapshotCache();
const feed = new FeedReader();
const relay = new RelayRegistry((events) => tell({ type: 'events', events }));
const acks = new RelayedAcks(settings.serveLastAckedOnNack, relay, (kind, version) => feed.typeOf(kind, version));
const grpc = createGrpcServer({ ...settings.server, cache, registry: relay, acks, log, tls: settings.tls });

port.on('message', (m: ToThread) => {
  switch (m.type) {
    case 'publish':
      cache.publish(feed.read(m.feed));
      break;
    case 'learn':
      for (const e of m.events) acks.learn(e);
      break;
    case 'tls':
      try {
        grpc.setTls(m.tls); // checked by the main thread already (listener-tls.ts)
      } catch (err) {
        log.error({ err }, 'listener certificate could not be set on this thread; it keeps the one it has');
      }
      break;
    case 'listen':
      grpc.listen(settings.host, m.port, { reusePort: true }).then(
        (p) => tell({ type: 'listening', port: p }),
        (err: Error) => tell({ type: 'failed', message: err.message }),
      );
      break;
    case 'end': {
      const closing = grpc.close(m.reason);
      relay.flush(); // the streams have ended: report them now
      void closing.then(() => tell({ type: 'ended' }));
      break;
    }
  }
});
