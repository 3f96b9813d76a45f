/** ES256 keys, their JWKS and tokens they sign, for JWT authentication through real Envoy. */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';

export const TEST_ISSUER = 'https://issuer.test';

export function ecKeys(): { publicKey: KeyObject; privateKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' });
}

/** A JWKS holding `pub` under key id `kid`. */
export function jwks(pub: KeyObject, kid = 'k'): string {
  return JSON.stringify({ keys: [{ ...pub.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] });
}

/** A compact JWS signed by `key`, issued by TEST_ISSUER, valid for an hour. */
export function signedToken(key: KeyObject, kid = 'k', claims: Record<string, unknown> = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const body = { iss: TEST_ISSUER, sub: 'a', iat: now, exp: now + 3600, ...claims };
  const input = `${b64({ alg: 'ES256', kid, typ: 'JWT' })}.${b64(body)}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}
