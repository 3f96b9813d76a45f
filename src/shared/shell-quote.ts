/** A word for sh, quoted so that nothing in it is expanded: hook scripts and generated commands. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
