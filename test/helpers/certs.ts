import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
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
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      String(opts.days ?? 365),
      '-subj',
      `/CN=${opts.cn ?? name}`,
    ],
    { stdio: 'ignore' },
  );
  chmodSync(key, 0o600);
  return { cert, key, certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') };
}

/** The base64 body of a PEM, as it would appear anywhere it leaked (not the armour lines). */
export function pemBody(pem: string): string[] {
  return pem.split('\n').filter((l) => l && !l.startsWith('-----'));
}

export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  caPem: string;
  /** A certificate signed by this CA with the given SANs (e.g. "URI:spiffe://x/node/a,DNS:localhost"). */
  issue(name: string, san: string, days?: number): CertFiles;
}

export function makePki(dir: string, name = 'ca'): Pki {
  const ca = makeCert(dir, name, { cn: `${name} root` });
  return {
    dir,
    caCert: ca.cert,
    caKey: ca.key,
    caPem: ca.certPem,
    issue(leaf: string, san: string, days = 30): CertFiles {
      const key = join(dir, `${leaf}.key`);
      const csr = join(dir, `${leaf}.csr`);
      const cert = join(dir, `${leaf}.crt`);
      const ext = join(dir, `${leaf}.ext`);
      execFileSync(
        'openssl',
        [
          'req',
          '-new',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-keyout',
          key,
          '-out',
          csr,
          '-subj',
          `/CN=${leaf}`,
        ],
        { stdio: 'ignore' },
      );
      writeFileSync(ext, `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\n`);
      execFileSync(
        'openssl',
        [
          'x509',
          '-req',
          '-in',
          csr,
          '-CA',
          ca.cert,
          '-CAkey',
          ca.key,
          '-CAcreateserial',
          '-out',
          cert,
          '-days',
          String(days),
          '-extfile',
          ext,
        ],
        { stdio: 'ignore' },
      );
      chmodSync(key, 0o600);
      return { cert, key, certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') };
    },
  };
}
