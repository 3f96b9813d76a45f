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

/** An IPv6 address without brackets in its canonical text (RFC 5952 as WHATWG URLs print it). */
function canonicalIpv6(host: string): string | undefined {
  try {
    const h = new URL(`http://[${host}]/`).hostname.slice(1, -1);
    // An IPv4-mapped address is the IPv4 address: one endpoint, one key.
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(h);
    if (!mapped) return h;
    const hi = parseInt(mapped[1]!, 16);
    const lo = parseInt(mapped[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  } catch {
    return undefined;
  }
}

/** An IP address in its canonical text (IPv4-mapped IPv6 as IPv4); undefined when not an IP. */
export function canonicalIp(host: string): string | undefined {
  const family = isIP(host);
  if (family === 4) return host;
  return family === 6 ? canonicalIpv6(host) : undefined;
}

/**
 * `IP:port` or `[IPv6]:port` in one spelling per endpoint (canonical IP, port without leading
 * zeros): what a client sends is a key only in this form. Undefined when it is not an IP and port.
 */
export function canonicalEndpoint(text: string): string | undefined {
  const hp = parseHostPort(text);
  const host = hp && canonicalIp(hp.host);
  if (!hp || !host) return undefined;
  return isIP(host) === 6 ? `[${host}]:${hp.port}` : `${host}:${hp.port}`;
}
