/**
 * The pure pieces of edge protection, table-driven: CIDR parsing, glob to RE2, JWT requirement
 * names, which filters a listener's virtual hosts need, and how a route's rate-limit actions keep
 * its virtual host's of the stages it does not set.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cidrRange } from '../../src/shared/addresses.ts';
import type { RouteDoc, VirtualHostDoc } from '../../src/model/schema.ts';
import { globToRegex } from '../../src/shared/glob.ts';
import {
  protectionsUsed,
  requirementName,
  routeRateLimits,
  virtualHostRateLimits,
} from '../../src/features/protection/translate.ts';

test('cidrRange: addresses and blocks, IPv4 and IPv6; malformed ones refused', () => {
  const cases: [string, ReturnType<typeof cidrRange>][] = [
    ['10.0.0.0/8', { address_prefix: '10.0.0.0', prefix_len: 8 }],
    ['192.0.2.7', { address_prefix: '192.0.2.7', prefix_len: 32 }],
    ['2001:db8::/32', { address_prefix: '2001:db8::', prefix_len: 32 }],
    ['::1', { address_prefix: '::1', prefix_len: 128 }],
    ['0.0.0.0/0', { address_prefix: '0.0.0.0', prefix_len: 0 }],
    ['10.0.0.0/33', undefined],
    ['2001:db8::/129', undefined],
    ['10.0.0.0/', undefined],
    ['10.0.0.0/8x', undefined],
    ['10.0.0/8', undefined],
    ['example.com', undefined],
    ['10.0.0.0/-1', undefined],
  ];
  for (const [text, want] of cases) assert.equal(cidrRange(text), want, text);
});

test('globToRegex: * and ? become RE2, everything else is literal', () => {
  const cases: [string, string, string[], string[]][] = [
    [
      '*.corp.example',
      '.*\\.corp\\.example',
      ['a.corp.example', 'x.y.corp.example'],
      ['corp.example', 'a.corpXexample'],
    ],
    ['spiffe://corp/ns/?/sa', 'spiffe://corp/ns/./sa', ['spiffe://corp/ns/a/sa'], ['spiffe://corp/ns/ab/sa']],
    ['a+b(c)[d]{e}|^$', 'a\\+b\\(c\\)\\[d\\]\\{e\\}\\|\\^\\$', ['a+b(c)[d]{e}|^$'], ['aab']],
  ];
  for (const [glob, regex, yes, no] of cases) {
    assert.is(globToRegex(glob), regex, glob);
    // Envoy matches the whole name.
    const re = new RegExp(`^(?:${regex})$`);
    for (const s of yes) assert.ok(re.test(s), `${glob} matches ${s}`);
    for (const s of no) assert.not.ok(re.test(s), `${glob} does not match ${s}`);
  }
});

test('requirement names: the same requirement always has the same name, optional ones apart', () => {
  assert.is(requirementName({ require: ['corp'] }), 'required:corp');
  assert.is(requirementName({ require: ['partner', 'corp'] }), 'required:partner,corp');
  assert.is(requirementName({ require: ['corp'], optional: true }), 'optional:corp');
  assert.is.not(requirementName({ require: ['corp'], optional: true }), requirementName({ require: ['corp'] }));
});

const route = (extra: Partial<RouteDoc>): RouteDoc => ({ to: 'api', ...extra });
const vhost = (extra: Partial<VirtualHostDoc>, routes: RouteDoc[] = [route({})]): VirtualHostDoc => ({
  kind: 'VirtualHost',
  name: 'v',
  domains: ['*'],
  routes,
  ...extra,
});

test('protectionsUsed: what virtual hosts and routes set (not what they turn off)', () => {
  const cases: [string, VirtualHostDoc[], { rbac: boolean; localRateLimit: boolean; requirements: string[] }][] = [
    ['nothing', [vhost({})], { rbac: false, localRateLimit: false, requirements: [] }],
    [
      'only off',
      [vhost({ access: false, rateLimit: false, jwt: false })],
      { rbac: false, localRateLimit: false, requirements: [] },
    ],
    [
      'a route sets them',
      [
        vhost({}, [
          route({ access: { deny: ['10.0.0.1'] }, rateLimit: { requests: 1, per: '1s' }, jwt: { require: ['a'] } }),
        ]),
      ],
      { rbac: true, localRateLimit: true, requirements: ['required:a'] },
    ],
    [
      'requirements from every level, once each',
      [
        vhost({ jwt: { require: ['a'] } }, [
          route({ jwt: { require: ['a'] } }),
          route({ jwt: { require: ['b'], optional: true } }),
        ]),
      ],
      { rbac: false, localRateLimit: false, requirements: ['required:a', 'optional:b'] },
    ],
  ];
  for (const [what, vs, want] of cases) {
    const u = protectionsUsed(vs);
    assert.equal(
      { rbac: u.rbac, localRateLimit: u.localRateLimit, requirements: [...u.requirements.keys()] },
      want,
      what,
    );
  }
});

test("a route's rate-limit actions replace its virtual host's of the same stage and keep the others", () => {
  const perClient = { rateLimit: { requests: 5, per: '1s', by: 'clientAddress' as const } };
  const global = { globalRateLimit: [[{ generic: { value: 'v' } }]] };
  const vh = virtualHostRateLimits({ ...perClient, ...global });
  assert.equal(vh, [
    { stage: 1, actions: [{ remote_address: {} }] },
    { actions: [{ generic_key: { descriptor_value: 'v' } }] },
  ]);
  const cases: [string, Partial<RouteDoc>, unknown][] = [
    ['nothing of its own: the virtual host applies', {}, undefined],
    [
      'its own global descriptors: with the virtual host local key',
      { globalRateLimit: [[{ path: true }]] },
      [
        { actions: [{ request_headers: { header_name: ':path', descriptor_key: 'path' } }] },
        { stage: 1, actions: [{ remote_address: {} }] },
      ],
    ],
    [
      'its own local key: with the virtual host global descriptors',
      { rateLimit: { requests: 1, per: '1s', by: { header: 'x-key' } } },
      [
        { stage: 1, actions: [{ request_headers: { header_name: 'x-key', descriptor_key: 'header' } }] },
        { actions: [{ generic_key: { descriptor_value: 'v' } }] },
      ],
    ],
  ];
  for (const [what, r, want] of cases) assert.equal(routeRateLimits(route(r), vh), want, what);
});

test.run();
