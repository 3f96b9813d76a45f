/** An Envoy format operator (access log formats, header values): %NAME%, %NAME(arguments)%, optionally :length. */
const FORMAT_OPERATOR = /^%[A-Z][A-Z0-9_]*(\([^()%]*\))?(:[0-9]+)?%$/;

/** The `%...%` pieces of a format that are not operators Envoy could parse. */
export function badOperators(format: string): string[] {
  const bad: string[] = [];
  for (let at = format.indexOf('%'); at >= 0;) {
    const end = format.indexOf('%', at + 1);
    if (end < 0) {
      bad.push(format.slice(at));
      break;
    }
    const piece = format.slice(at, end + 1);
    if (piece !== '%%' && !FORMAT_OPERATOR.test(piece)) bad.push(piece);
    at = format.indexOf('%', end + 1);
  }
  return bad;
}
