/**
 * fleetxds's regex verdicts against real Envoy, per release: every pattern of a corpus of edge
 * cases (test/helpers/re2-corpus.ts) is checked by `envoy --mode validate` of 1.36 and 1.40 and by
 * the validator's model of that release. Verdicts must agree (accepted; refused for its syntax;
 * refused for its program size). Sizes must agree exactly for 1.40 (Latin-1) and for patterns of
 * ASCII alone; for UTF-8 classes of non-ASCII characters the model's size is a lower bound; for
 * Unicode property classes (judged with a margin) the verdict may be stricter than Envoy's, never laxer.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ENVOY_REGEX_RELEASES, envoyRegexRefusal } from '../../src/model/re2-program.ts';
import { envoyBinary, type EnvoyVersion } from '../helpers/envoy.ts';
import { re2Corpus } from '../helpers/re2-corpus.ts';
import { tempDir } from '../helpers/tree.ts';

type Verdict = { kind: 'ok' } | { kind: 'syntax'; text: string } | { kind: 'size'; size: number };

const dir = tempDir();
let n = 0;

function bootstrap(regex: string): string {
  const route = { match: { safe_regex: { regex } }, direct_response: { status: 200 } };
  const hcm = {
    '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
    stat_prefix: 'x',
    http_filters: [
      {
        name: 'envoy.filters.http.router',
        typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
      },
    ],
    route_config: { virtual_hosts: [{ name: 'v', domains: ['*'], routes: [route] }] },
  };
  const file = join(dir, `b${n++}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      static_resources: {
        listeners: [
          {
            name: 'l',
            address: { socket_address: { address: '127.0.0.1', port_value: 10000 } },
            filter_chains: [{ filters: [{ name: 'hcm', typed_config: hcm }] }],
          },
        ],
      },
    }),
  );
  return file;
}

function envoyVerdict(version: EnvoyVersion, regex: string): Promise<Verdict> {
  const file = bootstrap(regex);
  return new Promise((resolve) => {
    execFile(
      envoyBinary(version),
      ['--mode', 'validate', '-c', file, '-l', 'critical', '--disable-hot-restart'],
      (err, stdout, stderr) => {
        if (!err) return resolve({ kind: 'ok' });
        const text = `${stdout}\n${stderr}`;
        const size = /RE2 program size of (\d+)/.exec(text);
        resolve(
          size ? { kind: 'size', size: Number(size[1]) } : { kind: 'syntax', text: text.trim().split('\n').pop()! },
        );
      },
    );
  });
}

function ours(regex: string, encoding: 'utf8' | 'latin1'): Verdict {
  const r = envoyRegexRefusal(regex, encoding);
  if (!r) return { kind: 'ok' };
  return r.syntax !== undefined ? { kind: 'syntax', text: r.syntax } : { kind: 'size', size: r.size! };
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

test('every verdict of the validator agrees with real Envoy 1.36 and 1.40 on the corpus', async () => {
  const corpus = re2Corpus();
  assert.ok(corpus.length >= 400, `${corpus.length} patterns`);
  const jobs = corpus.flatMap((regex) => ENVOY_REGEX_RELEASES.map((r) => ({ regex, ...r })));
  const results = await mapLimit(jobs, 4, async (j) => ({
    ...j,
    envoy: await envoyVerdict(j.release as EnvoyVersion, j.regex),
    ours: ours(j.regex, j.encoding),
  }));
  const disagreements: string[] = [];
  let exact = 0;
  let stricter = 0;
  for (const r of results) {
    const where = `Envoy ${r.release} ${JSON.stringify(r.regex)}: Envoy ${JSON.stringify(r.envoy)}, ours ${JSON.stringify(r.ours)}`;
    // Unicode property classes in UTF-8 are judged with a margin (UNICODE_CLASS_MARGIN), which may
    // refuse what Envoy would take, never the other way round.
    const unicodeClass = r.encoding === 'utf8' && /\\[pP]/.test(r.regex);
    if (unicodeClass && r.envoy.kind === 'ok' && r.ours.kind === 'size') stricter++;
    else if (r.envoy.kind !== r.ours.kind) disagreements.push(where);
    else if (r.envoy.kind === 'size' && r.ours.kind === 'size') {
      // eslint-disable-next-line no-control-regex
      const asciiOnly = r.encoding === 'latin1' || !/[^\x00-\x7f]|\\[pP]|\\x\{[0-9a-fA-F]{3,}\}|\(\?i\)/.test(r.regex);
      // With a Unicode property class both refuse it; the sizes reported differ (Envoy's tables).
      if (unicodeClass) continue;
      if (asciiOnly ? r.ours.size !== r.envoy.size : r.ours.size > r.envoy.size) disagreements.push(where);
      else if (r.ours.size === r.envoy.size) exact++;
    }
  }
  console.log(`  ${stricter} patterns with Unicode classes refused here with the margin, accepted by Envoy 1.36`);
  assert.equal(disagreements, [], `${disagreements.length} of ${results.length} verdicts disagree`);
  console.log(`  ${results.length} verdicts agree (${corpus.length} patterns x 2 releases); ${exact} sizes exact`);
});

test.run();
