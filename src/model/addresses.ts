import { isIP } from 'node:net';

/** `10.0.0.1:80`, `[2001:db8::1]:80`, `host.example:80` -> host and port; undefined if malformed. */
export function parseHostPort(text: string): { host: string; port: number } | undefined {
  const m = /^\[([0-9A-Fa-f:.]+)\]:([0-9]{1,5})$/.exec(text) ?? /^([^:[\]]+):([0-9]{1,5})$/.exec(text);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1] ?? '', port };
}

/** `10.0.0.0/8` or a bare address (a /32 or /128) as a CidrRange; undefined when malformed. */
export function cidrRange(text: string): { address_prefix: string; prefix_len: number } | undefined {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const family = isIP(address);
  if (!family) return undefined;
  const max = family === 4 ? 32 : 128;
  if (slash < 0) return { address_prefix: address, prefix_len: max };
  const len = text.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(len) || Number(len) > max) return undefined;
  return { address_prefix: address, prefix_len: Number(len) };
}
