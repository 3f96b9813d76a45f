/**
 * TLS material for `Secret` documents, read from the files they name (relative paths against the
 * config directory). Checked before use: the chain parses, the key parses and matches the leaf
 * certificate, the certificate is not expired (and warns within `warnDays`), and key files are
 * not readable by group or others. Never logged, never stored in SQLite: callers see fingerprints.
 */
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import type { SecretDoc } from '../model/schema.ts';
import type { Origin, SecretMaterial } from '../model/types.ts';
import { appendAll } from '../shared/arrays.ts';

export const EXPIRY_WARN_DAYS = 14;

function splitPem(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

export async function loadSecret(
  doc: SecretDoc,
  configDir: string,
  origin: Origin | undefined,
  now = new Date(),
): Promise<{ material?: SecretMaterial; diagnostics: Diagnostic[] }> {
  const diagnostics: Diagnostic[] = [];
  const location = origin ? { file: origin.file, line: origin.line, column: 1 } : undefined;
  const problem = (severity: 'error' | 'warning', message: string, path?: string) =>
    diagnostics.push({ code: Codes.INVALID_VALUE, severity, message, location, subject: `Secret/${doc.name}`, path });
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(configDir, p));
  const read = async (field: 'certificateFile' | 'privateKeyFile' | 'caFile'): Promise<string | undefined> => {
    const p = doc[field];
    if (!p) return undefined;
    try {
      const st = await stat(abs(p));
      if (field === 'privateKeyFile' && (st.mode & 0o037) !== 0) {
        problem(
          'warning',
          `private key file ${p} is accessible to group or others (mode ${(st.mode & 0o777).toString(8)}); use ` +
            `0600 or 0640 with a dedicated group`,
          field,
        );
      }
      return await readFile(abs(p), 'utf8');
    } catch (err) {
      problem('error', `cannot read ${p}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, field);
      return undefined;
    }
  };
  const [cert, key, ca] = [await read('certificateFile'), await read('privateKeyFile'), await read('caFile')];
  if (diagnostics.some((d) => d.severity === 'error')) return { diagnostics };
  const material: SecretMaterial = {
    name: doc.name,
    fingerprint: '',
    files: [doc.certificateFile, doc.privateKeyFile, doc.caFile].filter((x): x is string => !!x).map(abs),
  };
  if (cert !== undefined) {
    const pems = splitPem(cert);
    let leaf: X509Certificate | undefined;
    try {
      if (!pems.length) throw new Error('no PEM certificate found');
      const chain = pems.map((p) => new X509Certificate(p));
      leaf = chain[0];
    } catch (err) {
      problem('error', `certificate chain does not parse: ${(err as Error).message}`, 'certificateFile');
    }
    if (leaf) {
      const notAfter = new Date(leaf.validTo);
      material.notAfter = notAfter.toISOString();
      material.subject = leaf.subject.replace(/\n/g, ', ');
      if (notAfter <= now) problem('error', `certificate expired on ${material.notAfter}`, 'certificateFile');
      else if (notAfter.getTime() - now.getTime() < EXPIRY_WARN_DAYS * 86_400_000)
        problem(
          'warning',
          `certificate expires on ${material.notAfter}, in less than ${EXPIRY_WARN_DAYS} days`,
          'certificateFile',
        );
      if (key !== undefined) {
        try {
          if (!leaf.checkPrivateKey(createPrivateKey(key)))
            problem('error', 'the private key does not match the certificate', 'privateKeyFile');
        } catch (err) {
          problem('error', `private key does not parse: ${(err as Error).message.split('\n')[0]}`, 'privateKeyFile');
        }
      }
    }
    material.certificateChain = cert;
    material.privateKey = key;
  }
  if (ca !== undefined) {
    try {
      if (!splitPem(ca).length) throw new Error('no PEM certificate found');
      splitPem(ca).forEach((p) => {
        new X509Certificate(p);
      });
    } catch (err) {
      problem('error', `CA bundle does not parse: ${(err as Error).message}`, 'caFile');
    }
    material.ca = ca;
  }
  if (diagnostics.some((d) => d.severity === 'error')) return { diagnostics };
  material.fingerprint = createHash('sha256')
    .update(cert ?? '')
    .update('\0')
    .update(ca ?? '')
    .digest('hex');
  return { material, diagnostics };
}

/** Loads every Secret of a model; errors mean the tree must not be applied. */
export async function loadSecrets(
  docs: readonly SecretDoc[],
  configDir: string,
  originOf: (name: string) => Origin | undefined,
): Promise<{ materials: Map<string, SecretMaterial>; diagnostics: Diagnostic[] }> {
  const materials = new Map<string, SecretMaterial>();
  const diagnostics: Diagnostic[] = [];
  for (const doc of docs) {
    const r = await loadSecret(doc, configDir, originOf(doc.name));
    appendAll(diagnostics, r.diagnostics);
    if (r.material) materials.set(doc.name, r.material);
  }
  return { materials, diagnostics };
}
