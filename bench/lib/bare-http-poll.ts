/**
 * The floor of the machine for held REST polls (`npm run bench -- rest`): bare node:http, no
 * framework and no xDS logic. It reads each POST's JSON body, holds the response, and on SIGHUP
 * answers every held poll with 200 and the same pre-encoded body (the bytes fleetxds sent for the
 * same poll). What it holds per poll and spends on the release is the least a Node server can.
 *
 * Usage: node --import tsx bench/lib/bare-http-poll.ts BODY.json EXPECTED_POLLS
 * Prints {"event":"listening","port"}, then {"event":"held"} once EXPECTED_POLLS polls are held.
 */
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';

const [file, expected] = process.argv.slice(2);
const body = readFileSync(file!);
const held: ServerResponse[] = [];

const server = createServer((req, res) => {
  let text = '';
  req.setEncoding('utf8');
  req.on('data', (d: string) => (text += d));
  req.on('end', () => {
    JSON.parse(text); // as any server of DiscoveryRequests must
    held.push(res);
    if (held.length === Number(expected)) console.log(JSON.stringify({ event: 'held', held: held.length }));
  });
});
// As fleetxds's REST server: the held polls outlive Node's default request timeout.
server.requestTimeout = 0;
process.on('SIGHUP', () => {
  for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end(body);
});
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ event: 'listening', port: (server.address() as { port: number }).port }));
});
