import type { SecretMaterial } from '../model/types.ts';

/** The Envoy Secret resource (proto3 JSON). Holds key material: never log or persist it. */
export function secretResource(m: SecretMaterial): Record<string, unknown> {
  const out: Record<string, unknown> = { name: m.name };
  if (m.certificateChain) {
    out.tls_certificate = {
      certificate_chain: { inline_bytes: Buffer.from(m.certificateChain).toString('base64') },
      private_key: { inline_bytes: Buffer.from(m.privateKey ?? '').toString('base64') },
    };
  } else if (m.ca) {
    out.validation_context = { trusted_ca: { inline_bytes: Buffer.from(m.ca).toString('base64') } };
  }
  return out;
}
