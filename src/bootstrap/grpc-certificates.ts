/**
 * The certificate providers a gRPC application's bootstrap declares (gRFC A29): one file-watcher
 * instance per Secret its node group's resources name (a GrpcServer's certificate and client CA,
 * the TLS of the services its gRPC services call), reading the files at the paths the Secret gives
 * for application hosts (`onHost`), else at the Secret's own paths. The application re-reads them
 * every `refresh_interval`: a certificate renewed on disk is used without a restart.
 */
import { isAbsolute, resolve } from 'node:path';
import type { SecretDoc, ServiceDoc } from '../model/schema.ts';
import { connectedServices, docOf, listenerGroups, routeTargets, type Model } from '../model/types.ts';

export const CERTIFICATE_REFRESH = '60s';

export interface FileWatcherProvider {
  plugin_name: 'file_watcher';
  config: {
    certificate_file?: string;
    private_key_file?: string;
    ca_certificate_file?: string;
    refresh_interval: string;
  };
}

/** The Secrets a group's gRPC applications read, in name order. */
export function grpcSecretNames(model: Model, group: string): string[] {
  const names = new Set<string>();
  const inGroup = <T extends { groups?: string[] }>(docs: readonly T[] | undefined) =>
    (docs ?? []).filter((d) => listenerGroups(d).includes(group));
  for (const s of inGroup(model.grpcServers)) {
    if (s.tls) names.add(s.tls.secret);
    if (s.tls?.clientCa) names.add(s.tls.clientCa);
  }
  for (const g of inGroup(model.grpcServices))
    for (const route of g.routes)
      for (const target of routeTargets(route)) {
        const s = docOf(model, 'Service', target) as ServiceDoc | undefined;
        for (const m of s ? connectedServices(model, s) : []) {
          if (m.tls?.caSecret) names.add(m.tls.caSecret);
          if (m.tls?.clientSecret) names.add(m.tls.clientSecret);
        }
      }
  return [...names].sort();
}

/** `certificate_providers` of the bootstrap; paths made absolute against the config directory. */
export function grpcCertificateProviders(
  model: Model,
  group: string,
  configDir: string,
): Record<string, FileWatcherProvider> {
  const out: Record<string, FileWatcherProvider> = {};
  for (const name of grpcSecretNames(model, group)) {
    const s = docOf(model, 'Secret', name) as SecretDoc | undefined;
    if (!s) continue;
    const path = (k: 'certificateFile' | 'privateKeyFile' | 'caFile') => {
      const p = s.onHost?.[k] ?? s[k];
      return p === undefined ? undefined : isAbsolute(p) ? p : resolve(configDir, p);
    };
    out[name] = {
      plugin_name: 'file_watcher',
      config: {
        ...(path('certificateFile') && { certificate_file: path('certificateFile') }),
        ...(path('privateKeyFile') && { private_key_file: path('privateKeyFile') }),
        ...(path('caFile') && { ca_certificate_file: path('caFile') }),
        refresh_interval: CERTIFICATE_REFRESH,
      },
    };
  }
  return out;
}
