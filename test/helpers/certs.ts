import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertFiles {
  cert: string;
  key: string;
  certPem: string;
  keyPem: string;
}

/** A self-signed certificate and key made with openssl (mode 0600 key). */
export function makeCert(dir: string, name: string, opts: { days?: number; cn?: string } = {}): CertFiles {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', String(opts.days ?? 365), '-subj', `/CN=${opts.cn ?? name}`], { stdio: 'ignore' });
  chmodSync(key, 0o600);
  return { cert, key, certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') };
}

/** The base64 body of a PEM, as it would appear anywhere it leaked (not the armour lines). */
export function pemBody(pem: string): string[] {
  return pem.split('\n').filter((l) => l && !l.startsWith('-----'));
}
