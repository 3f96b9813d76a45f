/**
 * The certificate, key and client CA of fleetxds's own TLS listeners (gRPC, REST): read and
 * checked at start, and read again when their files change, so a certificate that a CA agent or
 * certbot renews is served to new connections without a restart (which would cut every proxy's
 * stream). Open connections keep the certificate they were established with.
 */
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';

/** The protocol settings of a listener: what OpenSSL negotiates, besides the files. */
export interface TlsProtocolSettings {
  /** The oldest TLS version accepted (Node's default: TLSv1.2). */
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  /** OpenSSL cipher list for TLS 1.2 (TLS 1.3 suites are not affected); Node's default list otherwise. */
  ciphers?: string;
}

export interface TlsFileSettings extends TlsProtocolSettings {
  certFile: string;
  keyFile: string;
  clientCaFile?: string;
}

/** What a TLS server needs (plain data: it is cloned into serving threads). */
export interface ListenerTls extends TlsProtocolSettings {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
}

export interface ListenerTlsInfo {
  /** sha256 of the leaf certificate (DER), as `openssl x509 -fingerprint -sha256` prints it. */
  fingerprint: string;
  notAfter: Date;
  subject: string;
  /** sha256 over the certificate, key and CA files: whether anything changed. */
  digest: string;
}

/** A TLS listener's server options: with a client CA, client certificates are required and checked against it. */
export function listenerOptions(tls: ListenerTls): ListenerTls & { requestCert?: true; rejectUnauthorized?: true } {
  return { ...tls, ...(tls.ca && { requestCert: true, rejectUnauthorized: true }) };
}

function read(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Reads a listener's files and checks they can serve: the certificate and the CA parse, and the
 * key is the certificate's (a renewal caught between writing the certificate and the key must not
 * be served). Throws an error naming the file and what is wrong.
 */
export function readListenerTls(files: TlsFileSettings): { tls: ListenerTls; info: ListenerTlsInfo } {
  const cert = read(files.certFile);
  const key = read(files.keyFile);
  const ca = files.clientCaFile ? read(files.clientCaFile) : undefined;
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`${files.certFile}: not a PEM certificate (${(err as Error).message})`, { cause: err });
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new Error(`${files.keyFile}: not a PEM private key (${(err as Error).message})`, { cause: err });
  }
  if (!leaf.checkPrivateKey(privateKey))
    throw new Error(`${files.keyFile} is not the private key of the certificate in ${files.certFile}`);
  if (ca && files.clientCaFile) {
    try {
      new X509Certificate(ca);
    } catch (err) {
      throw new Error(`${files.clientCaFile}: not a PEM certificate (${(err as Error).message})`, { cause: err });
    }
  }
  const protocol: TlsProtocolSettings = {
    ...(files.minVersion && { minVersion: files.minVersion }),
    ...(files.ciphers && { ciphers: files.ciphers }),
  };
  if (protocol.ciphers)
    try {
      createSecureContext({ ciphers: protocol.ciphers });
    } catch (err) {
      throw new Error(`tls.ciphers "${protocol.ciphers}": ${(err as Error).message}`, { cause: err });
    }
  try {
    // What setSecureContext will do with them, in every serving thread: it must not fail there.
    createSecureContext({ cert, key, ...(ca && { ca }), ...protocol });
  } catch (err) {
    throw new Error(`${files.certFile}: cannot be served (${(err as Error).message})`, { cause: err });
  }
  const digest = createHash('sha256').update(cert).update('\0').update(key).update('\0');
  if (ca) digest.update(ca);
  return {
    tls: { cert, key, ...(ca && { ca }), ...protocol },
    info: {
      fingerprint: leaf.fingerprint256,
      notAfter: new Date(leaf.validTo),
      subject: leaf.subject.replaceAll('\n', ', '),
      digest: digest.digest('hex'),
    },
  };
}
