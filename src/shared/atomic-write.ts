import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Write-to-temp in the same directory, fsync, rename over the target, fsync the directory.
 * Envoy's file subscriptions react only to the rename (IN_MOVED_TO), and readers never see a
 * partial file. The temp file is created with O_EXCL so a planted symlink is never followed.
 */
export async function writeFileAtomic(dest: string, data: string | Uint8Array, mode = 0o640): Promise<void> {
  const dir = dirname(dest);
  const tmp = join(dir, `.${basename(dest)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  // (isAtomicWriteTemp below recognises this name.)
  const fh = await open(tmp, 'wx', mode);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, dest);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
  await fsyncDir(dir);
}

export async function fsyncDir(dir: string): Promise<void> {
  const dh = await open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/** A temporary file of `writeFileAtomic` (one a crash left behind, if no write is under way). */
export function isAtomicWriteTemp(name: string): boolean {
  return /^\..+\.\d+\.[0-9a-f]{8}\.tmp$/.test(name);
}
