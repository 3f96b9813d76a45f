/**
 * Regexes near the edges of what Envoy's RE2 accepts: escapes around \x{FF} and beyond, \C,
 * classes of several ranges, negations, case folding, Unicode classes, non-ASCII literals, and
 * repeats around the program size limit. Deterministic: the same list every run.
 */
export function re2Corpus(): string[] {
  const out = new Set<string>();
  const add = (p: string) => out.add(p);
  for (const hex of ['41', '7F', '80', 'FF', '100', '17F', '7FF', '800', 'FFFF', '10000', '10FFFF'])
    for (const form of [`/\\x{${hex}}`, `/[\\x{${hex}}]`, `(?i)/\\x{${hex}}`, `/[a\\x{${hex}}]`]) add(form);
  for (const p of ['/\\C', '/a\\Cb', '/\\C+', '/é', '/[é]', '/[àé]', '(?i)/é', '/ü+', '/€', '/[€$]', '/日本']) add(p);
  const classes = [
    '[a-z]',
    '[a-z0-9]',
    '[a-z0-9-]',
    '[a-z0-9_.-]',
    '[A-Za-z0-9]',
    '[0-9a-f]',
    '[^/]',
    '[^a-z]',
    '[^\\n]',
    '\\d',
    '\\w',
    '\\s',
    '\\D',
    '\\W',
    '.',
    '[[:alpha:]]',
    '[[:punct:]]',
    '\\pL',
    '\\p{Greek}',
    '\\p{Arabic}',
    '\\p{Han}',
    '\\p{Cyrillic}+',
    '[\\p{Hebrew}\\p{Thai}]',
    '\\PL',
    '[\\x{100}-\\x{200}]',
    '[a-c\\x{3b1}-\\x{3c9}]',
  ];
  for (const c of classes) {
    add(`/${c}`);
    add(`(?i)/${c}`);
    add(`/${c}+`);
    for (const n of [3, 8, 12, 20]) add(`/api/${c}{${n}}`);
    for (const [lo, hi] of [
      [1, 10],
      [8, 20],
      [20, 30],
      [1, 45],
    ] as const) {
      add(`/api/${c}{${lo},${hi}}`);
      add(`(?i)/api/${c}{${lo},${hi}}`);
    }
  }
  for (let n = 40; n <= 100; n += 5) add(`/items/[0-9]{1,${n}}`);
  for (let n = 80; n <= 100; n += 2) add(`/a{0,${n}}`);
  for (let n = 8; n <= 11; n++) add(`(?i)/${'abcdefghij'.repeat(n)}`);
  for (const p of [
    '/api/v[0-9]+/.*',
    '^/(users|groups)/[0-9]+$',
    '/(?:a|b|c|d)+/x',
    '/\\b[a-z]+\\b',
    '(?s)/.*',
    '/(a)(b)(c)(d)(e)',
    '/[[:^alpha:]]',
    '/x*?y+?z??',
    '/\\Qa.b\\E',
    '/(?<=a)b',
    '/a(?=b)',
    '/(?P<id>[0-9]+)',
    '/(?<id>[0-9]+)',
    '/a\\z',
    '(?U)/a+',
    '/a{1000}',
    '/a{1001}',
    '/a{2,1}',
    '/(a)\\1',
    '/[z-a]',
    '/\\p{Foo}',
    '/\\pN+',
    '/x**',
    '/(?i:A)b',
    '/(?m)^a$',
  ])
    add(p);
  return [...out];
}
