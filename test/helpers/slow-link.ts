/**
 * A TCP relay that delays what a client sends by a fixed time (what the client receives goes
 * straight through): a proxy whose requests reach the server late, as on a slow or loaded link.
 * Order is kept: every chunk waits the same time, and equal timers fire in the order they were set.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface SlowLink {
  port: number;
  close(): Promise<void>;
}

export async function startSlowLink(targetPort: number, delayMs: number): Promise<SlowLink> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => setTimeout(() => upstream.write(chunk), delayMs));
    client.on('end', () => setTimeout(() => upstream.end(), delayMs));
    upstream.pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
