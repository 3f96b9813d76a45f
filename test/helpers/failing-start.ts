/**
 * A process that starts the server with one listener's port already taken (argv[2]: admin or rest),
 * so the start fails midway. It prints what was left open after the failure, then lets its event
 * loop run dry: it exits by itself only if nothing (listener, serving thread, timer, watcher) is left.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { startServer } from './server.ts';
import { BASE, tempDir, writeTree } from './tree.ts';

const taken = process.argv[2] as 'admin' | 'rest';
const blocker: Server = createServer();
await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
const blocked = `127.0.0.1:${(blocker.address() as { port: number }).port}`;
const database = join(tempDir(), 'fleetxds.db');
const grpcProbe = createServer();
await new Promise<void>((r) => grpcProbe.listen(0, '127.0.0.1', r));
const grpcPort = (grpcProbe.address() as { port: number }).port;
await new Promise<void>((r) => grpcProbe.close(() => r()));

const config = writeTree(BASE);
let error = '';
try {
  const app = await startServer(config, {
    database,
    watch: true,
    grpcListen: `127.0.0.1:${grpcPort}`,
    grpc: { threads: 2 },
    rest: taken === 'rest' ? { listen: blocked } : { listen: '127.0.0.1:0' },
    adminListen: taken === 'admin' ? blocked : undefined,
  });
  await app.close();
} catch (err) {
  error = (err as Error).message;
}
await new Promise<void>((r) => blocker.close(() => r()));

// The gRPC port can be bound again, and no descriptor of this process points at the database.
const rebound = await new Promise<boolean>((resolve) => {
  const s = createServer();
  s.once('error', () => resolve(false));
  s.listen(grpcPort, '127.0.0.1', () => s.close(() => resolve(true)));
});
const databaseOpen = readdirSync('/proc/self/fd').some((fd) => {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`).startsWith(database);
  } catch {
    return false;
  }
});
console.log(JSON.stringify({ error, rebound, databaseOpen }));
