import http from 'node:http';

/** Many parallel polls need one connection each (Envoy's REST client has one outstanding request). */
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

/** Node metadata of a proxy that opted into long polling (as `fleetxds bootstrap` writes it), up to 600 s. */
export const LONG_POLL = { fleetxds: { long_poll_ms: 600_000 } };

export interface PollResult {
  status: number;
  /** When the response ended. */
  at: number;
  /** Bytes of the response body. */
  bytes: number;
  /** version_info, read from the start of the body without parsing it. */
  version?: string;
}

/**
 * POST /v3/discovery:clusters over plain HTTP with a fresh connection. The body is counted, not
 * kept: thousands of parallel polls answered at once must not make this client the slow side.
 */
export function pollClusters(port: number, body: object): Promise<PollResult> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v3/discovery:clusters',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
      },
      (res) => {
        let head = '';
        let bytes = 0;
        res.on('data', (d: Buffer) => {
          if (head.length < 256) head += d.toString('latin1', 0, 256);
          bytes += d.length;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            at: Date.now(),
            bytes,
            version: /"version_info":"([^"]*)"/.exec(head)?.[1],
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** One REST discovery request as any client may send it (its own Host): the status and the parsed body. */
export function restRequest(
  port: number,
  body: object,
  opts: { host?: string; path?: string; agent?: http.Agent } = {},
): Promise<{ status: number; json?: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: opts.path ?? '/v3/discovery:clusters',
        ...(opts.agent && { agent: opts.agent }),
        headers: { 'content-type': 'application/json', ...(opts.host && { host: opts.host }) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
