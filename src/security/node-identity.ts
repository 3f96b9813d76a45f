/**
 * Binds a node's claimed identity to its client certificate. The certificate's URI SANs say which
 * node ids (and optionally clusters) it may claim, e.g.
 *   URI:spiffe://fleet.example/node/edge-1        node.id must be edge-1
 *   URI:spiffe://fleet.example/node/edge-*        any id matching the glob
 *   URI:spiffe://fleet.example/cluster/edge       node.cluster must be edge (if any cluster SAN is present)
 * A node claiming anything else is refused (any valid certificate claiming any node is the classic
 * hole: consul#362, receptor#202).
 */
import type { NodeIdentity } from '../model/node-groups.ts';
import { globToRegExp } from '../shared/glob.ts';

export interface PeerCertificateLike {
  subjectaltname?: string;
}

export function checkNodeIdentity(
  node: Pick<NodeIdentity, 'id' | 'cluster'>,
  cert: PeerCertificateLike | undefined,
  prefix: string,
): string | undefined {
  if (!cert) return 'a client certificate is required';
  const uris = (cert.subjectaltname ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.startsWith('URI:'))
    .map((s) => s.slice(4));
  const ids = uris.filter((u) => u.startsWith(`${prefix}node/`)).map((u) => u.slice(prefix.length + 5));
  const clusters = uris.filter((u) => u.startsWith(`${prefix}cluster/`)).map((u) => u.slice(prefix.length + 8));
  if (!ids.some((p) => globToRegExp(p).test(node.id)))
    return `node id "${node.id}" is not allowed by the client certificate`;
  if (clusters.length && !clusters.some((p) => globToRegExp(p).test(node.cluster)))
    return `node cluster "${node.cluster}" is not allowed by the client certificate`;
  return undefined;
}
