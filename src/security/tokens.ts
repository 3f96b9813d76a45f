/**
 * Bearer tokens with roles. The configuration holds only sha256 digests of tokens (generate one
 * with `fleetxds token`); comparison hashes the presented token first, so lengths never leak and
 * timingSafeEqual always compares 32 bytes.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export type Role = 'read' | 'admin';

export interface TokenEntry {
  name: string;
  sha256: string;
  role: Role;
}

export class TokenAuth {
  private readonly entries: { name: string; digest: Buffer; role: Role }[];

  constructor(entries: readonly TokenEntry[]) {
    this.entries = entries.map((e) => ({ name: e.name, role: e.role, digest: Buffer.from(e.sha256, 'hex') }));
  }

  get enabled(): boolean {
    return this.entries.length > 0;
  }

  /** The token's name and role, or undefined. Accepts `Bearer <token>`. */
  check(authorization: string | undefined): { name: string; role: Role } | undefined {
    const digest = bearerDigest(authorization);
    if (!digest) return undefined;
    let found: { name: string; role: Role } | undefined;
    for (const e of this.entries)
      if (e.digest.length === 32 && timingSafeEqual(e.digest, digest)) found = { name: e.name, role: e.role };
    return found;
  }
}

/** The sha256 of the token in an `Authorization: Bearer <token>` header, or undefined. */
export function bearerDigest(authorization: string | undefined): Buffer | undefined {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  return token === undefined ? undefined : createHash('sha256').update(token).digest();
}

/** A new random token and the digest to put in the settings. */
export function newToken(): { token: string; sha256: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, sha256: createHash('sha256').update(token).digest('hex') };
}
