/**
 * What Envoy's RE2 (C++) makes of a regex: whether it parses, and its program size, which Envoy
 * bounds (runtime key `re2.max_program_size.error_level`, default 100). re2js parses RE2 syntax
 * and compiles a program, but its compiler is Go's: a character class is one instruction there,
 * while C++ RE2 compiles it to a byte-range automaton (one instruction per byte range, joined by
 * alternations, UTF-8 sequences sharing their common bytes). So the size is re2js's program with
 * each rune instruction replaced by what C++ RE2 allocates for it, simulated here as RE2's
 * compiler does (compile.cc: AddRuneRangeUTF8, AddSuffixRecursive, the rune cache, Add_80_10ffff).
 *
 * Envoy releases differ in the encoding they compile with: up to 1.36 UTF-8; 1.40 Latin-1, where
 * an escape above \x{FF} is invalid, a non-ASCII character of the pattern is its UTF-8 bytes, and
 * classes keep only their part up to 0xFF.
 */
import { RE2JS } from 're2js';

export type Re2Encoding = 'utf8' | 'latin1';

/**
 * The Envoy releases whose regex rules differ, with the encoding each compiles with (verified
 * against 1.36.4 and 1.40.0). A pattern is checked against both, so a fleet that runs either, or
 * a release between them, is covered.
 */
export const ENVOY_REGEX_RELEASES: readonly { release: string; encoding: Re2Encoding }[] = [
  { release: '1.36', encoding: 'utf8' },
  { release: '1.40', encoding: 'latin1' },
];

/**
 * Envoy refuses a regex whose compiled RE2 program is larger than this (runtime key
 * `re2.max_program_size.error_level`, default 100): `RE2 program size of 130 > max program size of 100`.
 */
export const ENVOY_RE2_MAX_PROGRAM_SIZE = 100;

/**
 * Unicode property classes (`\p{Arabic}`, `\PL`) compile, in UTF-8, to as many byte ranges as
 * the Unicode tables of Envoy's RE2 give them; those tables are newer than re2js's, and have more
 * ranges for some scripts (`\p{Arabic}`: 88 here, 103 in Envoy 1.36). A pattern that uses one is
 * judged with this margin on its UTF-8 size, so what this check accepts Envoy accepts too.
 */
const UNICODE_CLASS_MARGIN = 1.25;
const UNICODE_CLASS = /\\[pP]/;

/**
 * What one Envoy release makes of a pattern: its refusal, or undefined when it accepts it. The
 * size is the estimate the limit was checked against (with the Unicode class margin in UTF-8).
 */
export function envoyRegexRefusal(
  pattern: string,
  encoding: Re2Encoding,
): { syntax?: string; size?: number } | undefined {
  let size: number;
  try {
    size = re2ProgramSize(pattern, encoding);
  } catch (err) {
    return { syntax: (err as Error).message };
  }
  if (encoding === 'utf8' && UNICODE_CLASS.test(pattern)) size = Math.ceil(size * UNICODE_CLASS_MARGIN);
  return size > ENVOY_RE2_MAX_PROGRAM_SIZE ? { size } : undefined;
}

/** A pattern RE2 refuses, in RE2's words. */
export class Re2SyntaxError extends Error {}

// re2js's instruction opcodes (its Inst class).
const RUNE = 8;
const RUNE1 = 9;
const RUNE_ANY = 10;
const RUNE_ANY_NOT_NL = 11;
const FOLD_CASE = 1;

/** re2js's instruction program counts neither C++ RE2's fail instruction nor its unanchored `.*?` loop. */
const UNANCHORED_PROLOGUE = 2;

interface ReInst {
  op: number;
  runes: ArrayLike<number>;
  arg: number;
}

/**
 * The text re2js is given for `encoding`: `\C` (one byte, which re2js does not know) becomes a
 * one-instruction literal; for Latin-1, escapes above \x{FF} are refused and every non-ASCII
 * character becomes the bytes it is in UTF-8, as Envoy hands RE2 the pattern's bytes.
 */
function rewrite(pattern: string, encoding: Re2Encoding): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) {
      const next = pattern[i + 1]!;
      if (next === 'C' && !inClass) {
        out += '\\x00';
        i++;
        continue;
      }
      if (next === 'x' && encoding === 'latin1') {
        const m = /^\{([0-9A-Fa-f]+)\}/.exec(pattern.slice(i + 2));
        if (m && parseInt(m[1]!, 16) > 0xff) throw new Re2SyntaxError(`invalid escape sequence: \\x{${m[1]}}`);
      }
      if (next === 'Q') {
        // \Q...\E quotes: copied as they are (their non-ASCII characters too, below).
        const end = pattern.indexOf('\\E', i + 2);
        const quoted = end < 0 ? pattern.slice(i + 2) : pattern.slice(i + 2, end);
        out += quoted.replace(/[\s\S]/gu, (ch) => literal(ch, encoding));
        i = end < 0 ? pattern.length : end + 1;
        continue;
      }
      out += c + literal(next, encoding, true);
      i++;
      continue;
    }
    if (c === '[' && !inClass) inClass = true;
    else if (c === ']' && inClass && !/\[\^?$/.test(out)) inClass = false;
    const cp = pattern.codePointAt(i)!;
    if (cp > 0xffff) i++;
    out += literal(String.fromCodePoint(cp), encoding);
  }
  return out;
}

function literal(ch: string, encoding: Re2Encoding, escaped = false): string {
  const cp = ch.codePointAt(0)!;
  if (cp < 0x80 || encoding === 'utf8') return ch;
  const bytes = Buffer.from(ch, 'utf8');
  // An escaped non-ASCII character is the same literal: its bytes stand for themselves.
  return (escaped ? '\\' : '') + [...bytes].map((b) => `\\x{${b.toString(16)}}`).join('');
}

/**
 * The size of the program C++ RE2 compiles `pattern` to, with `encoding`; throws Re2SyntaxError
 * for a pattern it refuses.
 */
export function re2ProgramSize(pattern: string, encoding: Re2Encoding): number {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(rewrite(pattern, encoding));
  } catch (err) {
    if (err instanceof Re2SyntaxError) throw err;
    throw new Re2SyntaxError((err as Error).message);
  }
  // re2js keeps its compiled program on the matcher it wraps (not part of its typed API).
  const prog = (compiled as unknown as { re2Input: { prog: { inst: ReInst[] } } }).re2Input.prog;
  let size = compiled.programSize() + UNANCHORED_PROLOGUE;
  for (const inst of prog.inst) {
    const cost = runeCost(inst, encoding);
    if (cost !== undefined) size += cost - 1;
  }
  return size;
}

type Range = [lo: number, hi: number];

function rangesOf(runes: ArrayLike<number>): Range[] {
  const out: Range[] = [];
  for (let i = 0; i + 1 < runes.length; i += 2) out.push([runes[i]!, runes[i + 1]!]);
  return out;
}

/** The case-folding orbit of one rune, as RE2's parser builds it for (?i): re2js's class for `(?i)[r]`. */
function foldOrbit(r: number): Range[] {
  const c = RE2JS.compile(`(?i)[\\x{${r.toString(16)}}]`);
  const prog = (c as unknown as { re2Input: { prog: { inst: ReInst[] } } }).re2Input.prog;
  const inst = prog.inst.find((i) => i.op === RUNE || i.op === RUNE1);
  if (!inst) return [[r, r]];
  if (inst.op === RUNE1) return [[inst.runes[0]!, inst.runes[0]!]];
  if (inst.runes.length === 1) return [[r, r]];
  return rangesOf(inst.runes);
}

/** C++ RE2's instructions for one re2js rune instruction; undefined for other instructions. */
function runeCost(inst: ReInst, encoding: Re2Encoding): number | undefined {
  let ranges: Range[];
  switch (inst.op) {
    case RUNE1:
      return literalCost(inst.runes[0]!, encoding);
    case RUNE_ANY:
      ranges = [[0, 0x10ffff]];
      break;
    case RUNE_ANY_NOT_NL:
      ranges = [
        [0, 9],
        [11, 0x10ffff],
      ];
      break;
    case RUNE:
      ranges = inst.runes.length === 1 ? foldOrbit(inst.runes[0]!) : rangesOf(inst.runes);
      if (inst.runes.length === 1 && !(inst.arg & FOLD_CASE)) ranges = [[inst.runes[0]!, inst.runes[0]!]];
      break;
    default:
      return undefined;
  }
  const max = encoding === 'latin1' ? 0xff : 0x10ffff;
  ranges = ranges.filter(([lo]) => lo <= max).map(([lo, hi]) => [lo, Math.min(hi, max)]);
  // RE2's parser turns a class of one character into a literal, and [Aa] into a folded literal.
  if (ranges.length === 1 && ranges[0]![0] === ranges[0]![1]) return literalCost(ranges[0]![0], encoding);
  if (
    ranges.length === 2 &&
    ranges[0]![0] === ranges[0]![1] &&
    ranges[1]![0] === ranges[1]![1] &&
    ranges[0]![0] >= 65 &&
    ranges[0]![0] <= 90 &&
    ranges[1]![0] === ranges[0]![0] + 32
  )
    return 1;
  return classCost(ranges, encoding);
}

function literalCost(r: number, encoding: Re2Encoding): number {
  if (encoding === 'latin1' || r < 0x80) return 1;
  return Buffer.byteLength(String.fromCodePoint(r), 'utf8');
}

function contains(ranges: Range[], c: number): boolean {
  return ranges.some(([lo, hi]) => lo <= c && c <= hi);
}

/** CharClass::FoldsASCII: the class treats A-Z as it treats a-z. */
function foldsAscii(ranges: Range[]): boolean {
  for (let c = 65; c <= 90; c++) if (contains(ranges, c) !== contains(ranges, c + 32)) return false;
  return true;
}

/** Compiler::PostVisit for kRegexpCharClass: the ranges, with the ASCII case-folding optimisation. */
function classCost(ranges: Range[], encoding: Re2Encoding): number {
  const fold = foldsAscii(ranges);
  const c = new RangeCompiler(encoding);
  for (const [lo, hi] of ranges) {
    if (fold && lo >= 65 && hi <= 90) continue;
    let f = fold;
    if ((lo <= 65 && hi >= 122) || hi < 65 || lo > 122 || (lo > 90 && hi < 97)) f = false;
    c.addRuneRange(lo, hi, f);
  }
  return c.size;
}

interface ByteInst {
  kind: 'byte' | 'alt';
  lo: number;
  hi: number;
  fold: boolean;
  out: number;
  out1: number;
}

/** The part of RE2's compiler that turns one class into instructions, counting what it allocates. */
class RangeCompiler {
  private readonly inst: ByteInst[] = [{ kind: 'alt', lo: 0, hi: 0, fold: false, out: 0, out1: 0 }];
  private readonly cache = new Map<string, number>();
  private begin = 0;

  constructor(private readonly encoding: Re2Encoding) {}

  /**
   * Instructions left once RE2 flattens the program (Prog::Flatten): its alternations become lists
   * of the instructions they lead to, so what a class costs is its byte ranges.
   */
  get size(): number {
    return this.inst.filter((i, n) => n > 0 && i.kind === 'byte').length;
  }

  private alloc(i: ByteInst): number {
    this.inst.push(i);
    return this.inst.length - 1;
  }

  private uncached(lo: number, hi: number, fold: boolean, next: number): number {
    return this.alloc({ kind: 'byte', lo, hi, fold, out: next, out1: 0 });
  }

  private cached(lo: number, hi: number, fold: boolean, next: number): number {
    const key = `${lo},${hi},${fold},${next}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const id = this.uncached(lo, hi, fold, next);
    this.cache.set(key, id);
    return id;
  }

  private isCached(id: number): boolean {
    const i = this.inst[id]!;
    return this.cache.get(`${i.lo},${i.hi},${i.fold},${i.out}`) === id;
  }

  addRuneRange(lo: number, hi: number, fold: boolean): void {
    if (this.encoding === 'latin1') {
      if (lo > hi || lo > 0xff) return;
      this.addSuffix(this.uncached(lo, Math.min(hi, 0xff), fold, 0));
      return;
    }
    this.addUtf8(lo, hi, fold);
  }

  private addUtf8(lo: number, hi: number, fold: boolean): void {
    if (lo > hi) return;
    if (lo === 0x80 && hi === 0x10ffff) {
      const cont1 = this.uncached(0x80, 0xbf, false, 0);
      this.addSuffix(this.uncached(0xc2, 0xdf, false, cont1));
      const cont2 = this.uncached(0x80, 0xbf, false, cont1);
      this.addSuffix(this.uncached(0xe0, 0xef, false, cont2));
      const cont3 = this.uncached(0x80, 0xbf, false, cont2);
      this.addSuffix(this.uncached(0xf0, 0xf4, false, cont3));
      return;
    }
    for (const max of [0x7f, 0x7ff, 0xffff]) {
      if (lo <= max && max < hi) {
        this.addUtf8(lo, max, fold);
        this.addUtf8(max + 1, hi, fold);
        return;
      }
    }
    if (hi < 0x80) {
      this.addSuffix(this.uncached(lo, hi, fold, 0));
      return;
    }
    for (let i = 1; i < 4; i++) {
      const m = (1 << (6 * i)) - 1;
      if ((lo & ~m) !== (hi & ~m)) {
        if ((lo & m) !== 0) {
          this.addUtf8(lo, lo | m, fold);
          this.addUtf8((lo | m) + 1, hi, fold);
          return;
        }
        if ((hi & m) !== m) {
          this.addUtf8(lo, (hi & ~m) - 1, fold);
          this.addUtf8(hi & ~m, hi, fold);
          return;
        }
      }
    }
    const ulo = Buffer.from(String.fromCodePoint(lo), 'utf8');
    const uhi = Buffer.from(String.fromCodePoint(hi), 'utf8');
    const n = ulo.length;
    let id = 0;
    for (let i = n - 1; i >= 0; i--) {
      if (i === n - 1 || (i > 0 && ulo[i]! < uhi[i]!)) id = this.cached(ulo[i]!, uhi[i]!, false, id);
      else id = this.uncached(ulo[i]!, uhi[i]!, false, id);
    }
    this.addSuffix(id);
  }

  private addSuffix(id: number): void {
    if (this.begin === 0) {
      this.begin = id;
      return;
    }
    if (this.encoding === 'utf8') {
      this.begin = this.addSuffixRecursive(this.begin, id);
      return;
    }
    this.begin = this.alloc({ kind: 'alt', lo: 0, hi: 0, fold: false, out: this.begin, out1: id });
  }

  private equal(a: number, b: number): boolean {
    const x = this.inst[a]!;
    const y = this.inst[b]!;
    return x.kind === 'byte' && y.kind === 'byte' && x.lo === y.lo && x.hi === y.hi && x.fold === y.fold;
  }

  /** FindByteRange: the place in the (sorted, forward) alternation where `id`'s byte range already is. */
  private find(root: number, id: number): { at: 'root' | 'out1'; alt: number } | undefined {
    const r = this.inst[root]!;
    if (r.kind === 'byte') return this.equal(root, id) ? { at: 'root', alt: root } : undefined;
    return this.equal(r.out1, id) ? { at: 'out1', alt: root } : undefined;
  }

  private addSuffixRecursive(root: number, id: number): number {
    const f = this.find(root, id);
    if (!f) return this.alloc({ kind: 'alt', lo: 0, hi: 0, fold: false, out: root, out1: id });
    let br = f.at === 'root' ? root : this.inst[f.alt]!.out1;
    if (this.isCached(br)) {
      const b = this.inst[br]!;
      const clone = this.alloc({ kind: 'byte', lo: b.lo, hi: b.hi, fold: b.fold, out: b.out, out1: 0 });
      br = clone;
      if (f.at === 'root') root = br;
      else this.inst[f.alt]!.out1 = br;
    }
    let out = this.inst[id]!.out;
    if (!this.isCached(id)) {
      // The head was the instruction allocated last: RE2 frees it.
      if (id === this.inst.length - 1) this.inst.pop();
    }
    out = this.addSuffixRecursive(this.inst[br]!.out, out);
    this.inst[br]!.out = out;
    return root;
  }
}
