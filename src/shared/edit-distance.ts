/** Levenshtein distance, for "did you mean ...?" hints on unknown names and fields. */
export function editDistance(a: string, b: string): number {
  // Two rows of the Levenshtein table: the previous one and the one being filled.
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}
