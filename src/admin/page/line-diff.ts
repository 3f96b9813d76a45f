/**
 * A line diff for the history view: the longest common subsequence of two texts' lines, as kept,
 * removed and added lines. Quadratic in lines, so each side is cut at MAX_LINES first (the view
 * says so): an Envoy resource is rarely longer, and a cut is better than a frozen page.
 */
export const MAX_LINES = 1500;

export interface DiffLine {
  op: ' ' | '-' | '+';
  text: string;
}

export function lineDiff(before: string, after: string): { lines: DiffLine[]; cut: boolean } {
  const a0 = before === '' ? [] : before.split('\n');
  const b0 = after === '' ? [] : after.split('\n');
  const cut = a0.length > MAX_LINES || b0.length > MAX_LINES;
  const a = a0.slice(0, MAX_LINES);
  const b = b0.slice(0, MAX_LINES);
  // lcs[i][j]: the common lines of a[i..] and b[j..], one row of (b.length + 1) per line of a.
  const w = b.length + 1;
  const lcs = new Uint16Array((a.length + 1) * w);
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i * w + j] =
        a[i] === b[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
  const lines: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      lines.push({ op: ' ', text: a[i]! });
      i++;
      j++;
    } else if (lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!) lines.push({ op: '-', text: a[i++]! });
    else lines.push({ op: '+', text: b[j++]! });
  }
  while (i < a.length) lines.push({ op: '-', text: a[i++]! });
  while (j < b.length) lines.push({ op: '+', text: b[j++]! });
  return { lines, cut };
}
