import { createHash } from 'node:crypto';

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Short content hash used for resource and type versions (64 bits are plenty to detect change). */
export function shortHash(data: string | Uint8Array): string {
  return sha256Hex(data).slice(0, 16);
}
