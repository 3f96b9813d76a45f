import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { formatDiagnostic, type Diagnostic } from '../../src/shared/diagnostics.ts';
import { BASE, diagnosticsOf, writeTree } from '../helpers/tree.ts';
import { firstInvalidUtf8 } from '../../src/source/read-tree.ts';

function only(ds: Diagnostic[], code: string): Diagnostic {
  const hits = ds.filter((d) => d.code === code);
  assert.is(hits.length, 1, `expected exactly one ${code}, got:\n${ds.map(formatDiagnostic).join('\n')}`);
  return hits[0]!;
}

function at(d: Diagnostic, file: string, line: number, column?: number): void {
  assert.ok(d.location, `no location on ${formatDiagnostic(d)}`);
  assert.is(d.location.file, file);
  assert.is(d.location.line, line, formatDiagnostic(d));
  if (column !== undefined) assert.is(d.location.column, column, formatDiagnostic(d));
}

test('the base fixture is valid', async () => {
  const r = await checkTree(writeTree(BASE));
  assert.equal(r.diagnostics.map(formatDiagnostic), []);
  assert.ok(r.config);
});

test('malformed YAML: syntax error with line and column', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'bad.yaml': 'kind: Service\nname: x\nendpoints: [ {address: 1.2.3.4:80\n',
  });
  const d = ds.find((x) => x.code === 'FXDS_YAML_SYNTAX')!;
  assert.ok(d, ds.map(formatDiagnostic).join('\n'));
  assert.is(d.severity, 'error');
  assert.is(d.location!.file, 'bad.yaml');
  assert.ok(d.location!.line >= 3);
});

test('duplicate keys are a syntax error', async () => {
  const ds = await diagnosticsOf({ ...BASE, 'dup.yaml': 'kind: Service\nname: x\nname: y\nendpoints: []\n' });
  const d = only(ds, 'FXDS_YAML_SYNTAX');
  assert.match(d.message, /unique/i);
  at(d, 'dup.yaml', 3);
});

test('unknown field is rejected at the key, with a suggestion', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'extra.yaml': 'kind: Service\nname: x\nendpoints: []\nconectTimeout: 1s\n',
  });
  const d = only(ds, 'FXDS_UNKNOWN_FIELD');
  assert.match(d.message, /unknown field "conectTimeout"/);
  assert.match(d.message, /did you mean "connectTimeout"/);
  assert.is(d.subject, 'Service/x');
  assert.is(d.path, 'conectTimeout');
  at(d, 'extra.yaml', 4, 1);
});

test('unknown nested field inside a route match', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace('match: { prefix: /api }', 'match: { prefix: /api, prefx: /x }'),
  });
  const d = only(ds, 'FXDS_UNKNOWN_FIELD');
  assert.is(d.path, 'routes[0].match.prefx');
  at(d, 'edge.yaml', 10);
});

test('unknown kind and missing kind', async () => {
  const ds = await diagnosticsOf({ ...BASE, 'k.yaml': 'kind: Servise\nname: x\n---\nname: y\n' });
  const kinds = ds.filter((d) => d.code === 'FXDS_UNKNOWN_KIND');
  assert.is(kinds.length, 2);
  assert.match(kinds[0]!.message, /unknown kind "Servise"/);
  at(kinds[0]!, 'k.yaml', 1);
  assert.match(kinds[1]!.message, /missing `kind`/);
  at(kinds[1]!, 'k.yaml', 4);
});

test('missing required field names the field', async () => {
  const ds = await diagnosticsOf({ ...BASE, 'l.yaml': 'kind: Listener\nname: other\nvirtualHosts: [site]\n' });
  const d = only(ds, 'FXDS_SCHEMA');
  assert.match(d.message, /missing required field "port"/);
  at(d, 'l.yaml', 1);
});

test('enum and pattern violations explain the allowed values', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    's.yaml': 'kind: Service\nname: s\nlb: fastest\nconnectTimeout: soon\nendpoints: []\n',
  });
  const lb = ds.find((d) => d.path === 'lb')!;
  assert.match(
    lb.message,
    /"fastest" is not allowed; use one of "round_robin", "least_request", "ring_hash", "maglev", "random"/,
  );
  at(lb, 's.yaml', 3, 5);
  const to = ds.find((d) => d.path === 'connectTimeout')!;
  assert.match(to.message, /duration/);
  at(to, 's.yaml', 4, 17);
});

test('dangling reference: route to a service that does not exist, with did-you-mean', async () => {
  const ds = await diagnosticsOf({ ...BASE, 'edge.yaml': BASE['edge.yaml']!.replace('to: api', 'to: apj') });
  const d = only(ds, 'FXDS_UNKNOWN_REFERENCE');
  assert.is(d.message, 'service "apj" does not exist (did you mean "api"?)');
  assert.is(d.subject, 'VirtualHost/site');
  assert.is(d.path, 'routes[0].to');
  at(d, 'edge.yaml', 11, 9);
});

test('dangling references from a listener: virtual host, node group, secret', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'l2.yaml': 'kind: Listener\nname: l2\nport: 9000\ngroups: [edgee]\ntls: { secret: nope }\nvirtualHosts: [sitee]\n',
  });
  const refs = ds.filter((d) => d.code === 'FXDS_UNKNOWN_REFERENCE');
  assert.equal(refs.map((d) => d.path).sort(), ['groups[0]', 'tls.secret', 'virtualHosts[0]']);
  assert.match(refs.find((d) => d.path === 'virtualHosts[0]')!.message, /did you mean "site"/);
  at(
    refs.find((d) => d.path === 'groups[0]')!,
    'l2.yaml',
    4,
  );
});

test('duplicate names across files point at the second and name the first', async () => {
  const ds = await diagnosticsOf({ ...BASE, 'z-more.yaml': '# again\nkind: Service\nname: api\nendpoints: []\n' });
  const d = only(ds, 'FXDS_DUPLICATE_NAME');
  assert.match(d.message, /Service "api" is already defined at services\.yaml:1/);
  at(d, 'z-more.yaml', 3, 7);
});

test('two listeners on one port in one group conflict; in different groups they do not', async () => {
  const clash = 'kind: Listener\nname: edge2\nport: 8080\nvirtualHosts: [site]\n';
  const ds = await diagnosticsOf({ ...BASE, 'clash.yaml': clash });
  const d = only(ds, 'FXDS_CONFLICT');
  assert.match(d.message, /port 8080 is also bound by listener "edge" .* in node group "default"/);
  const ok = await diagnosticsOf({
    ...BASE,
    'clash.yaml':
      clash.replace('port: 8080', 'port: 8080\ngroups: [other]') +
      '---\nkind: NodeGroup\nname: other\nmatch: { cluster: other }\n',
  });
  assert.equal(
    ok.filter((x) => x.severity === 'error'),
    [],
  );
});

test('the same domain in two virtual hosts of one listener conflicts', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'edge.yaml':
      BASE['edge.yaml']!.replace('virtualHosts: [site]', 'virtualHosts: [site, site2]') +
      '---\nkind: VirtualHost\nname: site2\ndomains: [EXAMPLE.com]\nroutes: [{ to: web }]\n',
  });
  const d = only(ds, 'FXDS_CONFLICT');
  assert.match(d.message, /domain "EXAMPLE.com" is served by both virtual hosts "site" and "site2"/);
});

test('a route with two actions, and one with none', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace(
      '  - to: web\n',
      '  - to: web\n    directResponse: { status: 200 }\n  - match: { prefix: /x }\n',
    ),
  });
  const msgs = ds.filter((d) => d.code === 'FXDS_INVALID_VALUE').map((d) => `${d.path}: ${d.message}`);
  assert.ok(
    msgs.includes('routes[1]: use only one of to, split, redirect, directResponse (got to, directResponse)'),
    msgs.join('\n'),
  );
  assert.ok(msgs.includes('routes[2]: a route needs one of to, split, redirect, directResponse'), msgs.join('\n'));
});

test('static endpoints must be IPs; hostnames point to dns', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'h.yaml': 'kind: Service\nname: h\nendpoints:\n  - address: db.internal:5432\n',
  });
  const d = only(ds, 'FXDS_INVALID_VALUE');
  assert.match(
    d.message,
    /host name; static endpoints must be IP addresses \(use `dns: \{host: db.internal, port: 5432\}`/,
  );
  assert.is(d.path, 'endpoints[0].address');
  at(d, 'h.yaml', 4, 14);
});

test('endpoint priorities must be contiguous', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'p.yaml':
      'kind: Service\nname: p\nendpoints:\n  - { address: 10.0.0.1:1 }\n  - { address: 10.0.0.2:1, priority: 2 }\n',
  });
  assert.match(only(ds, 'FXDS_INVALID_VALUE').message, /priority 2 is used but 1 is not/);
});

test('regexes must be RE2: no lookaround', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace('match: { prefix: /api }', 'match: { regex: "/api(?!/internal).*" }'),
  });
  const d = only(ds, 'FXDS_INVALID_VALUE');
  assert.is(d.path, 'routes[0].match.regex');
  assert.match(d.message, /RE2/);
});

test('every error of a tree is reported at once, across files, in file order', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'a.yaml': 'kind: Service\nname: a\nendpoints: []\nbogus: 1\n',
    'z.yaml': 'kind: Listener\nname: z\nport: 70000\nvirtualHosts: [site]\n',
    'edge.yaml': BASE['edge.yaml']!.replace('to: web', 'to: wbe'),
  });
  const errors = ds.filter((d) => d.severity === 'error');
  assert.equal(
    errors.map((d) => d.location!.file),
    ['a.yaml', 'edge.yaml', 'z.yaml'],
  );
});

test('protoc-gen-validate rules of the produced Envoy resources are checked and located', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace(
      'match: { prefix: /api }',
      'match: { prefix: /api, headers: [{ name: "x-bad\\r\\nheader", exact: "1" }] }',
    ),
  });
  const d = only(ds, 'FXDS_ENVOY_RESOURCE');
  assert.match(
    d.message,
    /invalid Envoy RouteConfiguration "edge": virtual_hosts\[0\]\.routes\[0\]\.match\.headers\[0\]\.name: is not a valid HTTP header (name|value)/,
  );
  assert.is(d.subject, 'VirtualHost/site');
  at(d, 'edge.yaml', 6);
});

test('warnings do not block a tree: lb least_request used by a proxyless gRPC service', async () => {
  const r = await checkTree(
    writeTree({
      ...BASE,
      'grpc.yaml':
        'kind: Service\nname: g\nlb: least_request\nendpoints: [{ address: 10.0.0.9:50051 }]\n---\nkind: ' +
        'GrpcService\nname: g\ntarget: g.internal:50051\nroutes: [{ to: g }]\n',
    }),
  );
  const w = only(r.diagnostics, 'FXDS_CLIENT_COMPAT');
  assert.is(w.severity, 'warning');
  assert.ok(r.config, 'a tree with only warnings builds');
});

test('ejections gRPC clients ignore are warned about for a proxyless gRPC service (gRFC A50)', async () => {
  const r = await checkTree(
    writeTree({
      ...BASE,
      'grpc.yaml':
        'kind: Service\nname: g\nprotocol: grpc\nendpoints: [{ address: 10.0.0.9:50051 }]\n' +
        'outlierDetection: { consecutive5xx: 5, failurePercentage: { threshold: 50 } }\n---\n' +
        'kind: GrpcService\nname: g\ntarget: g.internal:50051\nroutes: [{ to: g }]\n',
    }),
  );
  const w = only(r.diagnostics, 'FXDS_CLIENT_COMPAT');
  assert.is(w.severity, 'warning');
  assert.match(w.message, /consecutive5xx, which gRPC clients ignore \(gRFC A50\)/);
  assert.ok(r.config);
});

test('an alias bomb is refused', async () => {
  const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 0; i < 8; i++)
    bomb.push(
      `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} ` +
        `[*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`,
    );
  const ds = await diagnosticsOf({ ...BASE, 'bomb.yaml': `${bomb.join('\n')}\n` });
  const d = only(ds, 'FXDS_YAML_LIMIT');
  assert.match(d.message, /alias/i);
  at(d, 'bomb.yaml', 1);
});

test('symlinked files inside the tree are refused', async () => {
  const dir = writeTree(BASE);
  symlinkSync('/etc/hostname', join(dir, 'link.yaml'));
  const ds = (await checkTree(dir)).diagnostics;
  const d = only(ds, 'FXDS_FILE_UNREADABLE');
  assert.match(d.message, /symbolic links/);
  at(d, 'link.yaml', 1);
});

test('editor temp files and dot-folders are ignored', async () => {
  const r = await checkTree(
    writeTree({ ...BASE, '.git/config.yaml': 'garbage: [', 'edge.yaml~': 'garbage: [', '.edge.yaml.swp': 'x: [' }),
  );
  assert.equal(r.diagnostics, []);
});

test('a document that is not a mapping', async () => {
  const ds = await diagnosticsOf({ ...BASE, 'list.yaml': '- kind: Service\n' });
  at(only(ds, 'FXDS_DOC_NOT_A_MAP'), 'list.yaml', 1);
});

test('non-UTF-8 bytes are refused with file:line:column, never turned into U+FFFD and served', async () => {
  const dir = writeTree({ ...BASE });
  const text = BASE['edge.yaml']!.replace('domains: [example.com]', 'domains: [example.com]\nnote: "x"');
  const bytes = Buffer.concat([
    Buffer.from(text.slice(0, text.indexOf('"x"') + 1)),
    Buffer.from([0x6a, 0x6f, 0x73, 0xe9]),
    Buffer.from(text.slice(text.indexOf('"x"') + 2)),
  ]);
  writeFileSync(join(dir, 'edge.yaml'), bytes);
  const r = await checkTree(dir);
  assert.is(r.config, undefined);
  assert.equal(r.diagnostics.map(formatDiagnostic), [
    'edge.yaml:9:11: error FXDS_YAML_SYNTAX: not valid UTF-8: byte 0xe9 at offset 124; YAML files must be UTF-8',
  ]);
  // A real U+FFFD (valid UTF-8) is just a character.
  assert.is(firstInvalidUtf8(Buffer.from('ok \uFFFD é', 'utf8')), undefined);
});

test('a route shadowed by an earlier one of its virtual host is a warning at its match', async () => {
  const ds = await diagnosticsOf({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace(
      '  - to: web\n',
      '  - to: web\n  - match: { prefix: /api/v2 }\n    to: api\n',
    ),
  });
  assert.equal(ds.map(formatDiagnostic), [
    'edge.yaml:13:12: warning FXDS_SHADOWED_ROUTE: VirtualHost/site routes[2].match: this route is never used: ' +
      'routes[0] comes first and matches every request it matches; put the more specific route first',
  ]);
  // More specific first is fine; different headers are not shadowing.
  const fine = await diagnosticsOf({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace(
      '  - match: { prefix: /api }\n',
      '  - match: { prefix: /api/v2, headers: [{ name: x, exact: "1" }] }\n    to: api\n  - match: { prefix: /api }\n',
    ),
  });
  assert.equal(fine.map(formatDiagnostic), []);
});

test('shadowing, case by case: which earlier match hides which later one', async () => {
  const cases: [string, string, boolean][] = [
    // earlier match, later match, shadowed?
    ['{ prefix: / }', '{ regex: "/x[0-9]+" }', true],
    ['{ prefix: /api }', '{ path: /api/v1 }', true],
    ['{ prefix: /api }', '{ prefix: /apx }', false],
    ['{ path: /a }', '{ path: /a }', true],
    ['{ path: /a }', '{ prefix: /a }', false],
    ['{ prefix: /API, caseSensitive: false }', '{ prefix: /api/v2 }', true],
    ['{ prefix: /api }', '{ prefix: /api/v2, caseSensitive: false }', false],
    ['{ regex: "/.*" }', '{ prefix: /a }', false],
    ['{ prefix: /a, headers: [{ name: x, exact: "1" }] }', '{ prefix: /a/b }', false],
    [
      '{ prefix: /a, headers: [{ name: x, exact: "1" }] }',
      '{ prefix: /a/b, headers: [{ name: x, exact: "1" }, { name: y, present: true }] }',
      true,
    ],
  ];
  for (const [earlier, later, shadowed] of cases) {
    const edge =
      `kind: Listener\nname: edge\nport: 8080\nvirtualHosts: [site]\n---\nkind: VirtualHost\nname: ` +
      `site\ndomains: [example.com]\nroutes:\n  - match: ${earlier}\n    to: web\n  - match: ${later}\n    to: ` +
      `api\n`;
    const ds = await diagnosticsOf({ ...BASE, 'edge.yaml': edge });
    assert.is(
      ds.some((d) => d.code === 'FXDS_SHADOWED_ROUTE'),
      shadowed,
      `${earlier} then ${later}: ${ds.map(formatDiagnostic).join('; ')}`,
    );
  }
});

/** BASE with its first route matched by `re`. */
const withRegex = (re: string) => ({
  ...BASE,
  'edge.yaml': BASE['edge.yaml']!.replace('  - match: { prefix: /api }', `  - match: { regex: ${JSON.stringify(re)} }`),
});

test('regexes are RE2, not JavaScript: (?i) is accepted, a repeat over 1000 and lookahead are refused', async () => {
  assert.equal((await diagnosticsOf(withRegex('(?i)/abc'))).map(formatDiagnostic), []);
  const over = await diagnosticsOf(withRegex('x{1001}'));
  assert.match(
    over.map(formatDiagnostic).join('\n'),
    /edge\.yaml:10:\d+: error FXDS_INVALID_VALUE: VirtualHost\/site routes\[0\]\.match\.regex: invalid RE2 regular expression .*invalid repeat count/,
  );
  const look = await diagnosticsOf(withRegex('/a(?=b)'));
  assert.match(look.map(formatDiagnostic).join('\n'), /invalid RE2 regular expression/);
});

test('regexes are judged as each Envoy release judges them, at file:line', async () => {
  const rows: [regex: string, expected: RegExp | undefined][] = [
    // Envoy 1.40 reads patterns as Latin-1: no escape above \x{FF}; 1.36 takes it.
    [
      '/\\x{100}',
      /10:\d+: error .*invalid RE2 regular expression .*\(Envoy 1\.40\): invalid escape sequence: \\x\{100\}; Envoy 1\.40 reads patterns as Latin-1/,
    ],
    ['/\\x{FF}', undefined],
    // \C (any byte) is RE2's own, accepted by both.
    ['/\\C', undefined],
    // Three ranges in a class cost three instructions per repetition: 109 for both releases.
    [
      '/api/[a-z0-9-]{20,30}',
      /RE2 program size of 109 for Envoy 1\.36, 109 for Envoy 1\.40 is over Envoy's limit of 100/,
    ],
    // Case folding adds ſ and K to [a-z] in UTF-8 (1.36) but not in Latin-1 (1.40).
    ['(?i)/api/[a-z0-9-]{8,20}', /RE2 program size of 181 for Envoy 1\.36 is over/],
    ['/api/[a-z0-9-]{8,10}', undefined],
  ];
  for (const [re, expected] of rows) {
    const text = (await diagnosticsOf(withRegex(re))).map(formatDiagnostic).join('\n');
    if (expected) assert.match(text, expected, re);
    else assert.is(text, '', re);
  }
});

test('TCP listeners and passthrough names: what cannot work is refused at file:line', async () => {
  const tcp = (body: string) => ({ ...BASE, 'tcp.yaml': `kind: Listener\nname: db\nport: 5432\n${body}` });
  const rows: [what: string, files: Record<string, string>, expected: RegExp][] = [
    [
      'HTTP and TCP at once',
      tcp('tcp: { to: api }\nvirtualHosts: [site]\n'),
      /tcp\.yaml:1:1: error FXDS_INVALID_VALUE: Listener\/db: a listener carries HTTP \(virtualHosts\) or TCP \(tcp\), not both/,
    ],
    ['neither', tcp(''), /a listener needs virtualHosts \(HTTP\), tcp \(TCP proxying\) or passthrough/],
    [
      'passthrough alone with a certificate',
      tcp('tls: { secret: c }\npassthrough: [{ serverNames: [a.example], to: api }]\n'),
      /tcp\.yaml:4:\d+: error FXDS_INVALID_VALUE: Listener\/db tls: a listener of passthrough names alone terminates nothing/,
    ],
    [
      'to and split',
      tcp('tcp: { to: api, split: [{ service: web, weight: 1 }] }\n'),
      /tcp\.yaml:4:\d+: error FXDS_INVALID_VALUE: Listener\/db tcp: tcp needs one of to and split/,
    ],
    [
      'an unknown service',
      tcp('tcp: { to: nope }\n'),
      /tcp\.yaml:4:\d+: error FXDS_UNKNOWN_REFERENCE: Listener\/db tcp\.to: service "nope" does not exist/,
    ],
    [
      'split weights all 0',
      tcp('tcp: { split: [{ service: api, weight: 0 }] }\n'),
      /the weights of a split must not all be 0/,
    ],
    [
      'the same port as an HTTP listener of the group',
      { ...BASE, 'tcp.yaml': 'kind: Listener\nname: db\nport: 8080\ntcp: { to: api }\n' },
      /error FXDS_CONFLICT: Listener\/edge port: port 8080 is also bound by listener "db"/,
    ],
    [
      'a passthrough name also terminated',
      {
        ...BASE,
        'edge.yaml': BASE['edge.yaml']!.replace(
          'virtualHosts: [site]',
          'virtualHosts: [site]\ntls: { secret: c, sni: [{ serverNames: [a.example], secret: c }] }\n' +
            'passthrough:\n  - serverNames: [a.example]\n    to: api\n',
        ),
        'c.yaml': 'kind: Secret\nname: c\ncertificateFile: /nonexistent.crt\nprivateKeyFile: /nonexistent.key\n',
      },
      /edge\.yaml:\d+:\d+: error FXDS_CONFLICT: Listener\/edge passthrough\[0\]\.serverNames\[0\]: server name "a\.example" is terminated here \(tls\.sni\) and passed through/,
    ],
    [
      'a name passed through twice',
      {
        ...BASE,
        'edge.yaml': BASE['edge.yaml']!.replace(
          'virtualHosts: [site]',
          'virtualHosts: [site]\npassthrough:\n  - { serverNames: [b.example], to: api }\n  - { serverNames: [B.example], to: web }\n',
        ),
      },
      /server name "B\.example" is also in passthrough\[0\]/,
    ],
  ];
  for (const [what, files, expected] of rows) {
    const text = (await diagnosticsOf(files)).map(formatDiagnostic).join('\n');
    assert.match(text, expected, `${what}:\n${text}`);
  }
});

test('access logs: what Envoy cannot use is refused at file:line', async () => {
  const withLog = (log: string, listener = BASE['edge.yaml']!) => ({
    ...BASE,
    'edge.yaml': listener.replace('virtualHosts: [site]', `virtualHosts: [site]\naccessLog:\n${log}`),
  });
  const rows: [what: string, files: Record<string, string>, expected: RegExp | undefined][] = [
    ['the defaults', withLog('  - to: /var/log/envoy/edge.json\n'), undefined],
    [
      'a relative path',
      withLog('  - to: logs/edge.json\n'),
      /edge\.yaml:\d+:\d+: error FXDS_INVALID_VALUE: Listener\/edge accessLog\[0\]\.to: "logs\/edge\.json" is not stdout, stderr or an absolute file path/,
    ],
    ['text without its line', withLog('  - { to: stdout, format: text }\n'), /format text needs the line to write/],
    [
      'fields with text',
      withLog("  - { to: stdout, format: text, text: '%START_TIME%', fields: { a: '%UPSTREAM_HOST%' } }\n"),
      /fields go with format: json/,
    ],
    [
      'a broken operator',
      withLog("  - { to: stdout, format: text, text: '%START_TIME% %REQ(:PATH %' }\n"),
      /"%REQ\(:PATH %" is not an Envoy format operator/,
    ],
    [
      'an unclosed operator',
      withLog("  - { to: stdout, fields: { t: '%START_TIME' } }\n"),
      /accessLog\[0\]\.fields\.t: "%START_TIME" is not an Envoy format operator/,
    ],
    [
      'min above max',
      withLog('  - { to: stdout, filter: { status: { min: 500, max: 400 } } }\n'),
      /min 500 is above max 400/,
    ],
    [
      'a status filter on TCP',
      {
        ...BASE,
        'tcp.yaml':
          'kind: Listener\nname: db\nport: 5432\ntcp: { to: api }\naccessLog:\n  - { to: stdout, filter: { status: { min: 500 } } }\n',
      },
      /Listener\/db accessLog\[0\]\.filter: a TCP listener logs connections: they have no status/,
    ],
  ];
  for (const [what, files, expected] of rows) {
    const text = (await diagnosticsOf(files)).map(formatDiagnostic).join('\n');
    if (expected) assert.match(text, expected, `${what}:\n${text}`);
    else assert.is(text, '', what);
  }
});

test('WebSocket switches only where upgrades exist', async () => {
  const route = await diagnosticsOf({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace(
      '  - to: web',
      '  - { match: { prefix: /old }, redirect: { path: /new }, websocket: false }\n  - to: web',
    ),
  });
  assert.match(
    route.map(formatDiagnostic).join('\n'),
    /edge\.yaml:\d+:\d+: error FXDS_INVALID_VALUE: VirtualHost\/site routes\[1\]\.websocket: `websocket` applies only to routes that forward/,
  );
  const tcp = await diagnosticsOf({
    ...BASE,
    'tcp.yaml': 'kind: Listener\nname: db\nport: 5432\ntcp: { to: api }\nwebsocket: false\n',
  });
  assert.match(tcp.map(formatDiagnostic).join('\n'), /Listener\/db websocket: WebSocket upgrades are HTTP/);
});

test('header edits Envoy would refuse are refused at file:line', async () => {
  const withHeaders = (h: string) => ({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace('    to: api', `    to: api\n    headers: ${h}`),
  });
  const rows: [what: string, headers: string, expected: RegExp | undefined][] = [
    ['a plain set', "{ request: { set: { x-a: '1' } } }", undefined],
    ['an operator', "{ request: { add: { x-ip: '%DOWNSTREAM_REMOTE_ADDRESS%' } } }", undefined],
    ['a literal percent', "{ response: { set: { x-p: '50%%' } } }", undefined],
    ['host', '{ request: { set: { host: example.com } } }', /"host" cannot be changed by a route/],
    ['a pseudo-header', "{ request: { remove: [':path'] } }", /":path" cannot be changed by a route/],
    ['not a header name', "{ response: { add: { 'x a': '1' } } }", /"x a" is not a header name/],
    [
      'a broken operator',
      "{ request: { set: { x-a: '%REQ(x' } } }",
      /"%REQ\(x" is not an Envoy format operator \(write %% for a literal %\)/,
    ],
    ['a line break', '{ request: { set: { x-a: "a\\nb" } } }', /a header value cannot hold a line break/],
  ];
  for (const [what, h, expected] of rows) {
    const text = (await diagnosticsOf(withHeaders(h))).map(formatDiagnostic).join('\n');
    if (expected)
      assert.match(
        text,
        new RegExp(
          `edge\\.yaml:\\d+:\\d+: error FXDS_INVALID_VALUE: VirtualHost/site routes\\[0\\]\\.headers\\..*?: ${expected.source}`,
        ),
        `${what}:\n${text}`,
      );
    else assert.is(text, '', what);
  }
});

test('connection-manager settings: what Envoy would refuse is refused at file:line', async () => {
  const withHttp = (http: string) => ({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace('virtualHosts: [site]', `virtualHosts: [site]\nhttp: ${http}`),
  });
  const rows: [what: string, files: Record<string, string>, expected: RegExp | undefined][] = [
    ['the usual', withHttp('{ useRemoteAddress: true, requestHeadersTimeout: 10s, serverName: edge }'), undefined],
    [
      'headers over 8 MB',
      withHttp('{ maxRequestHeadersKb: 9000 }'),
      /edge\.yaml:\d+:\d+: error FXDS_SCHEMA: Listener\/edge http\.maxRequestHeadersKb/,
    ],
    ['a bad duration', withHttp('{ requestTimeout: soon }'), /Listener\/edge http\.requestTimeout/],
    ['an unknown slash action', withHttp('{ escapedSlashes: drop }'), /Listener\/edge http\.escapedSlashes/],
    [
      'a connection window below the stream window',
      withHttp('{ http2: { initialStreamWindowSize: 1048576, initialConnectionWindowSize: 65536 } }'),
      /http\.http2\.initialConnectionWindowSize: the connection window must be at least the stream window/,
    ],
    [
      'on a TCP listener',
      {
        ...BASE,
        'tcp.yaml': 'kind: Listener\nname: db\nport: 5432\ntcp: { to: api }\nhttp: { useRemoteAddress: true }\n',
      },
      /Listener\/db http: http settings are for HTTP listeners/,
    ],
  ];
  for (const [what, files, expected] of rows) {
    const text = (await diagnosticsOf(files)).map(formatDiagnostic).join('\n');
    if (expected) assert.match(text, expected, `${what}:\n${text}`);
    else assert.is(text, '', what);
  }
});

test('retries: backoff bounds, and what gRPC clients cannot do', async () => {
  const http = (retries: string) => ({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace('    to: api', `    to: api\n    retries: ${retries}`),
  });
  const rows: [what: string, files: Record<string, string>, expected: RegExp | undefined][] = [
    [
      'the full set',
      http('{ on: [reset], statusCodes: [503], backoff: { base: 25ms, max: 1s }, retryOtherHosts: true }'),
      undefined,
    ],
    [
      'max below base',
      http('{ on: [reset], backoff: { base: 1s, max: 100ms } }'),
      /routes\[0\]\.retries\.backoff\.max: max is below base/,
    ],
    ['a zero base', http('{ on: [reset], backoff: { base: 0s } }'), /retries\.backoff\.base: base must be above 0/],
    [
      'a status out of range',
      http('{ on: [reset], statusCodes: [700] }'),
      /FXDS_SCHEMA: VirtualHost\/site routes\[0\]\.retries\.statusCodes\[0\]/,
    ],
    [
      'status codes on a gRPC route',
      {
        ...BASE,
        'grpc.yaml':
          'kind: GrpcService\nname: g\ntarget: g.example\nroutes:\n  - to: api\n    retries: { on: [unavailable], statusCodes: [503] }\n',
      },
      /GrpcService\/g routes\[0\]\.retries\.statusCodes: `statusCodes` is HTTP's/,
    ],
  ];
  for (const [what, files, expected] of rows) {
    const text = (await diagnosticsOf(files)).map(formatDiagnostic).join('\n');
    if (expected) assert.match(text, expected, `${what}:\n${text}`);
    else assert.is(text, '', what);
  }
});

test('affinity: one key per hash policy, ring sizes with ring_hash, and a warning where nothing hashes', async () => {
  const tree = (policy: string, lb = 'ring_hash', extra = '') => ({
    ...BASE,
    'services.yaml': BASE['services.yaml']!.replace('name: api\n', `name: api\nlb: ${lb}\n${extra}`),
    'edge.yaml': BASE['edge.yaml']!.replace('    to: api', `    to: api\n    hashPolicy: ${policy}`),
  });
  const rows: [what: string, files: Record<string, string>, expected: RegExp | undefined][] = [
    ['a header', tree('[{ header: x-user }]'), undefined],
    [
      'two keys in one',
      tree('[{ header: x-user, sourceIp: true }]'),
      /routes\[0\]\.hashPolicy\[0\]: a hash policy takes one of header, cookie, sourceIp, query \(got header, sourceIp\)/,
    ],
    ['no key', tree('[{ terminal: true }]'), /a hash policy takes one of header, cookie, sourceIp, query$/m],
    [
      'round robin',
      tree('[{ header: x-user }]', 'round_robin'),
      /warning FXDS_INVALID_VALUE: VirtualHost\/site routes\[0\]\.hashPolicy: service "api" balances round_robin: the hash policy has no effect/,
    ],
    [
      'ring sizes without ring_hash',
      tree('[{ header: x-user }]', 'maglev', 'ringHash: { minSize: 8 }\n'),
      /Service\/api ringHash: ringHash goes with lb: ring_hash/,
    ],
    [
      'min above max',
      tree('[{ header: x-user }]', 'ring_hash', 'ringHash: { minSize: 100, maxSize: 10 }\n'),
      /minSize is above maxSize/,
    ],
  ];
  for (const [what, files, expected] of rows) {
    const text = (await diagnosticsOf(files)).map(formatDiagnostic).join('\n');
    if (expected) assert.match(text, expected, `${what}:\n${text}`);
    else assert.is(text, '', what);
  }
});

test('address rules, limits and hashes on a listener that takes the client from x-forwarded-for are warned', async () => {
  const tree = (http: string) => ({
    ...BASE,
    'edge.yaml': `kind: Listener
name: edge
port: 8080
${http}virtualHosts: [site]
access: { deny: [10.9.0.0/16] }
---
kind: VirtualHost
name: site
domains: [example.com]
routes:
  - match: { prefix: /api }
    to: api
    access: { allow: [10.0.0.0/8] }
  - to: web
`,
  });
  const forwarded = await diagnosticsOf(tree('http: { xffNumTrustedHops: 2 }\n'));
  assert.equal(forwarded.map(formatDiagnostic), [
    'edge.yaml:6:9: warning FXDS_INVALID_VALUE: Listener/edge access: listener "edge" matches its address rules ' +
      'against the address x-forwarded-for names 2 hops in (http.xffNumTrustedHops): a client that reaches Envoy ' +
      'without passing through the trusted proxies chooses that address',
    'edge.yaml:14:13: warning FXDS_INVALID_VALUE: VirtualHost/site routes[0].access: listener "edge" matches what ' +
      'this virtual host keys by client address against the address x-forwarded-for names 2 hops in ' +
      '(http.xffNumTrustedHops): a client that reaches Envoy without passing through the trusted proxies chooses ' +
      'that address',
  ]);
  const claimed = await diagnosticsOf(tree('http: { useRemoteAddress: false }\n'));
  assert.is(claimed.length, 2);
  assert.match(formatDiagnostic(claimed[0]!), /the last x-forwarded-for address \(http.useRemoteAddress: false\)/);
  // The default (the connection's address) and useRemoteAddress: true are not warned.
  assert.equal(await diagnosticsOf(tree('')), []);
  assert.equal(await diagnosticsOf(tree('http: { useRemoteAddress: true }\n')), []);
});

test.run();
