/**
 * The certificate, key and client CA of fleetxds's own TLS listeners (gRPC, REST): read and
 * checked at start, and read again when their files change, so a certificate that a CA agent or
 * certbot renews is served to new connections without a restart (which would cut every proxy's
 * stream). Open connections keep the certificate they were established with.
 */
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { connect, createSecureContext, createServer } from 'node:tls';

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

/**
 * What a listener's files may hold: far beyond any real certificate chain, key or CA bundle, and
 * small enough that reading and parsing them cannot stall the server (a chain of thousands of
 * copies of the CA is valid, and costs OpenSSL seconds on every handshake).
 */
export const TLS_FILE_LIMITS = {
  certBytes: 256 * 1024,
  keyBytes: 64 * 1024,
  caBytes: 2 * 1024 * 1024,
  /** Certificates in the served chain (leaf and intermediates). */
  chainLength: 10,
  /** Certificates in the client CA bundle. */
  caCertificates: 1000,
} as const;

/** Reads `file` if it is at most `max` bytes (checked on the open file, before reading it). */
function read(file: string, max: number): Buffer {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const size = fstatSync(fd).size;
    if (size > max) throw new Error(`${size} bytes; at most ${max} are accepted`);
    return readFileSync(fd);
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function pemCertificates(pem: Buffer): number {
  let n = 0;
  const marker = '-----BEGIN CERTIFICATE-----';
  for (let at = pem.indexOf(marker); at >= 0; at = pem.indexOf(marker, at + marker.length)) n++;
  return n;
}

/**
 * Reads a listener's files and checks they can serve: the certificate and the CA parse, and the
 * key is the certificate's (a renewal caught between writing the certificate and the key must not
 * be served). Throws an error naming the file and what is wrong.
 */
export function readListenerTls(files: TlsFileSettings): { tls: ListenerTls; info: ListenerTlsInfo } {
  const cert = read(files.certFile, TLS_FILE_LIMITS.certBytes);
  const key = read(files.keyFile, TLS_FILE_LIMITS.keyBytes);
  const ca = files.clientCaFile ? read(files.clientCaFile, TLS_FILE_LIMITS.caBytes) : undefined;
  const chain = pemCertificates(cert);
  if (chain > TLS_FILE_LIMITS.chainLength)
    throw new Error(`${files.certFile}: a chain of ${chain} certificates; at most ${TLS_FILE_LIMITS.chainLength}`);
  if (ca && pemCertificates(ca) > TLS_FILE_LIMITS.caCertificates)
    throw new Error(
      `${files.clientCaFile}: ${pemCertificates(ca)} certificates; at most ${TLS_FILE_LIMITS.caCertificates}`,
    );
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

/**
 * Whether a TLS server with `tls` completes a handshake: a loopback server of its own and one
 * client, the way the listener would serve it (client certificates are not asked for here: what is
 * tried is the server's side). Rejects with the reason, or when it takes longer than `timeoutMs`.
 */
export function completesHandshake(tls: ListenerTls, timeoutMs = 5000): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer({ ...tls, ca: undefined });
    let timer: NodeJS.Timeout | undefined;
    const done = (err?: Error) => {
      clearTimeout(timer);
      server.close();
      if (err) reject(err);
      else resolve();
    };
    server.on('tlsClientError', (err) => done(err));
    server.on('secureConnection', (socket) => socket.end());
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      timer = setTimeout(() => {
        client.destroy();
        done(new Error(`no TLS handshake within ${timeoutMs} ms`));
      }, timeoutMs);
      const client = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
        client.end();
        done();
      });
      client.on('error', (err: Error) => done(err));
    });
  });
}
