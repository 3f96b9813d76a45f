/**
 * Globs on strings a client chooses (node ids, clusters, certificate names): `*` is any run of
 * characters, `?` exactly one. Matched without regular expressions: a translated `.*` regex
 * backtracks, so `*-*-*-*-prod` against an id of 512 dashes takes seconds. Here the pattern is
 * split at its stars; the first piece is anchored at the start, the last at the end, and each piece
 * between takes its leftmost place after the one before (leftmost is never worse for a glob). Work
 * is bounded by the input length times the pattern length, with no backtracking.
 */
export interface Glob {
  readonly source: string;
  test(input: string): boolean;
}

/** Does `piece` (with `?` as any one character) match `input` at `at`? */
function pieceAt(piece: string, input: string, at: number): boolean {
  if (at + piece.length > input.length) return false;
  for (let i = 0; i < piece.length; i++) {
    const c = piece.charCodeAt(i);
    if (c !== 63 /* ? */ && c !== input.charCodeAt(at + i)) return false;
  }
  return true;
}

/** The leftmost place at or after `from` where `piece` matches, or -1. */
function findPiece(piece: string, input: string, from: number): number {
  if (!piece.includes('?')) return input.indexOf(piece, from);
  for (let at = from; at + piece.length <= input.length; at++) if (pieceAt(piece, input, at)) return at;
  return -1;
}

export function compileGlob(source: string): Glob {
  const pieces = source.split('*');
  if (pieces.length === 1) {
    const exact = !source.includes('?');
    return {
      source,
      test: (input) => (exact ? input === source : input.length === source.length && pieceAt(source, input, 0)),
    };
  }
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  const middle = pieces.slice(1, -1).filter((p) => p.length > 0);
  const minLength = pieces.reduce((n, p) => n + p.length, 0);
  return {
    source,
    test(input) {
      if (input.length < minLength) return false;
      if (!pieceAt(first, input, 0)) return false;
      const end = input.length - last.length;
      if (!pieceAt(last, input, end)) return false;
      let at = first.length;
      for (const piece of middle) {
        const found = findPiece(piece, input, at);
        if (found < 0 || found + piece.length > end) return false;
        at = found + piece.length;
      }
      return true;
    },
  };
}

/** `*` any run of characters, `?` one character, everything else literal: as an RE2 regex,
 * for Envoy (RE2 does not backtrack). */
export function globToRegex(glob: string): string {
  let out = '';
  for (const ch of glob) {
    if (ch === '*') out += '.*';
    else if (ch === '?') out += '.';
    else out += /[\\^$.|+()[\]{}]/.test(ch) ? `\\${ch}` : ch;
  }
  return out;
}
