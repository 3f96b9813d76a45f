/**
 * The REST load client (`npm run bench -- rest`), a process of its own so it can be pinned to a
 * core apart from the server: N long-polling proxies (distinct node ids, each on its own
 * connection, as N Envoys would be) poll clusters with version V, then wait for the answers.
 *
 * Usage: node --import tsx bench/lib/rest-poll-client.ts PORT N VERSION
 * Prints {"event":"sent"} once every poll is on the wire, then {"event":"done","lastAt","answered200","bytes"}.
 */
import { LONG_POLL, pollClusters } from '../../test/helpers/rest-poll.ts';

const [port, n, version] = process.argv.slice(2);
const polls: ReturnType<typeof pollClusters>[] = [];
for (let i = 0; i < Number(n); i++) {
  polls.push(
    pollClusters(Number(port), {
      node: { id: `node-${i}`, cluster: 'c', user_agent_name: 'envoy', metadata: LONG_POLL },
      version_info: version,
    }),
  );
  // Stay under the listen backlog.
  if (i % 500 === 499) await new Promise((r) => setTimeout(r, 50));
}
console.log(JSON.stringify({ event: 'sent', sent: polls.length }));
const results = await Promise.all(polls);
console.log(
  JSON.stringify({
    event: 'done',
    lastAt: Math.max(...results.map((r) => r.at)),
    answered200: results.filter((r) => r.status === 200).length,
    bytes: results.reduce((a, r) => a + r.bytes, 0),
  }),
);
