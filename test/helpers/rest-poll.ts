import http from 'node:http';

/** Many parallel polls need one connection each (Envoy's REST client has one outstanding request). */
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

export interface PollResult {
  status: number;
  /** When the response ended. */
  at: number;
  /** version_info, read without parsing the whole body. */
  version?: string;
}

/** POST /v3/discovery:clusters over plain HTTP with a fresh connection. */
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
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () =>
          resolve({ status: res.statusCode!, at: Date.now(), version: /"version_info":"([^"]*)"/.exec(text)?.[1] }),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}
