/**
 * How deep a parsed JSON body is nested, walked without recursion: converters, `String()` and
 * `Number()` of nested arrays recurse, so a hostile body is refused before anything else reads it.
 */
export function nestedDeeperThan(root: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (depth > max) return true;
    if (v && typeof v === 'object')
      for (const child of Object.values(v)) if (child && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}
