/** `10.0.0.1:80`, `[2001:db8::1]:80`, `host.example:80` -> host and port; undefined if malformed. */
export function parseHostPort(text: string): { host: string; port: number } | undefined {
  const m = /^\[([0-9A-Fa-f:.]+)\]:([0-9]{1,5})$/.exec(text) ?? /^([^:[\]]+):([0-9]{1,5})$/.exec(text);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1] ?? '', port };
}
