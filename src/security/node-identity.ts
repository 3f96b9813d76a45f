/**
 * Binds a node's claimed identity to its client certificate. The certificate's URI SANs say which
 * node ids (and optionally clusters) it may claim, e.g.
 *   URI:spiffe://fleet.example/node/edge-1        node.id must be edge-1
 *   URI:spiffe://fleet.example/node/edge-*        any id matching the glob
 *   URI:spiffe://fleet.example/cluster/edge       node.cluster must be edge (if any cluster SAN is present)
 * A node claiming anything else is refused (any valid certificate claiming any node is the classic
 * hole: consul#362, receptor#202).
 */
import { TLSSocket, type PeerCertificate } from 'node:tls';
import type { NodeIdentity } from '../model/node-groups.ts';
import { compileGlob } from '../shared/glob.ts';

export interface PeerCertificateLike {
  subjectaltname?: string;
}

/** A certificate's subject alternative names of the given kinds (URI, DNS, IP), without their prefix. */
export function sanNames(
  cert: PeerCertificateLike | undefined,
  kinds: readonly ('URI' | 'DNS' | 'IP Address')[],
): string[] {
  return (cert?.subjectaltname ?? '')
    .split(',')
    .map((s) => s.trim())
    .flatMap((s) => {
      const colon = s.indexOf(':');
      return (kinds as readonly string[]).includes(s.slice(0, colon)) ? [s.slice(colon + 1)] : [];
    });
}

export function checkNodeIdentity(
  node: Pick<NodeIdentity, 'id' | 'cluster'>,
  cert: PeerCertificateLike | undefined,
  prefix: string,
): string | undefined {
  if (!cert) return 'a client certificate is required';
  const uris = sanNames(cert, ['URI']);
  const ids = uris.filter((u) => u.startsWith(`${prefix}node/`)).map((u) => u.slice(prefix.length + 5));
  const clusters = uris.filter((u) => u.startsWith(`${prefix}cluster/`)).map((u) => u.slice(prefix.length + 8));
  if (!ids.some((p) => compileGlob(p).test(node.id)))
    return `node id "${node.id}" is not allowed by the client certificate`;
  if (clusters.length && !clusters.some((p) => compileGlob(p).test(node.cluster)))
    return `node cluster "${node.cluster}" is not allowed by the client certificate`;
  return undefined;
}

const PEER_CERTIFICATES = new WeakMap<TLSSocket, PeerCertificate>();

/**
 * The client certificate of a TLS connection that was verified against the client CA, else
 * undefined. Read once per connection: a proxy sends many streams or polls over one.
 */
export function verifiedPeerCertificate(socket: unknown): PeerCertificate | undefined {
  if (!(socket instanceof TLSSocket) || !socket.authorized) return undefined;
  let cert = PEER_CERTIFICATES.get(socket);
  if (!cert) PEER_CERTIFICATES.set(socket, (cert = socket.getPeerCertificate()));
  return cert.raw ? cert : undefined;
}

/** A node's client certificate as the fleet status shows it (never the certificate itself). */
export interface ClientCertificate {
  /** Its URI and DNS names (what it may claim), or its subject when it has none. */
  names: string;
  /** sha256 of the certificate (DER), as `openssl x509 -fingerprint -sha256` prints it. */
  fingerprint: string;
  notAfter: string;
}

type PeerCertificateFields = {
  subjectaltname?: string;
  subject?: { CN?: string | string[] };
  fingerprint256?: string;
  valid_to?: string;
};
const SUMMARIES = new WeakMap<PeerCertificateFields, ClientCertificate>();

/**
 * What the status keeps of a verified client certificate (tls.TLSSocket#getPeerCertificate()):
 * made once per certificate object, so once per connection (see verifiedPeerCertificate), not per
 * stream or REST poll.
 */
export function clientCertificateOf(cert: PeerCertificateFields): ClientCertificate | undefined {
  if (!cert.fingerprint256 || !cert.valid_to) return undefined;
  let summary = SUMMARIES.get(cert);
  if (!summary) {
    const cn = [cert.subject?.CN ?? []].flat()[0];
    summary = {
      names: cert.subjectaltname || (cn ? `CN=${cn}` : ''),
      fingerprint: cert.fingerprint256,
      notAfter: new Date(cert.valid_to).toISOString(),
    };
    SUMMARIES.set(cert, summary);
  }
  return summary;
}
