/**
 * The registration API, on the REST listener (HTTPS with client certificates, or bearer tokens):
 *
 *   PUT    /v1/services/:service/endpoints/:address   register or heartbeat {weight, region, zone, health}
 *   POST   /v1/services/:service/endpoints/:address/drain
 *   DELETE /v1/services/:service/endpoints/:address
 *
 * The caller proves who it is with a client certificate whose name the Service's `registration`
 * allows, or a bearer token whose sha256 it lists. A refusal is answered 403 and audited.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Credentials, Membership, RegisterRequest } from '../../membership/membership.ts';
import { sanNames, verifiedPeerCertificate } from '../../security/node-identity.ts';
import { bearerDigest } from '../../security/tokens.ts';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';

export interface RegistrationApi {
  membership: Membership;
  /** Appends to the audit log. */
  audit(actor: string, action: string, detail: unknown): void;
}

/** The names of a verified client certificate (URI and DNS SANs), and the sha256 of a bearer token. */
function credentialsOf(req: FastifyRequest): Credentials {
  const digest = bearerDigest(req.headers.authorization);
  return {
    certificateNames: sanNames(verifiedPeerCertificate(req.raw.socket), ['URI', 'DNS']),
    ...(digest && { tokenSha256: digest.toString('hex') }),
  };
}

const SERVICE = /^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/;

function body(raw: unknown): Omit<RegisterRequest, 'address'> {
  const b = (raw ?? {}) as Record<string, unknown>;
  const out: Omit<RegisterRequest, 'address'> = {};
  if (b.weight !== undefined) {
    if (!Number.isInteger(b.weight) || (b.weight as number) < 1 || (b.weight as number) > 1_000_000)
      throw new FleetError(ErrorCodes.BAD_REQUEST, 'weight is an integer from 1 to 1000000');
    out.weight = b.weight as number;
  }
  for (const k of ['region', 'zone'] as const)
    if (b[k] !== undefined) {
      if (typeof b[k] !== 'string' || !b[k].length || b[k].length > 128)
        throw new FleetError(ErrorCodes.BAD_REQUEST, `${k} is a string of 1 to 128 characters`);
      out[k] = b[k];
    }
  if (b.health !== undefined) {
    if (b.health !== 'healthy' && b.health !== 'unhealthy')
      throw new FleetError(ErrorCodes.BAD_REQUEST, 'health is healthy or unhealthy');
    out.health = b.health;
  }
  return out;
}

export function registrationRoutes(app: FastifyInstance, api: RegistrationApi): void {
  type Params = { Params: { service: string; address: string } };
  /** The caller's identity for the service, or a 403 (audited) / 404. */
  const who = (req: FastifyRequest<Params>, action: string): string => {
    const { service, address } = req.params;
    if (!SERVICE.test(service)) throw new FleetError(ErrorCodes.BAD_REQUEST, 'not a service name');
    try {
      return api.membership.authorize(service, credentialsOf(req));
    } catch (err) {
      if (err instanceof FleetError && err.code === ErrorCodes.FORBIDDEN) {
        const cred = credentialsOf(req);
        api.audit(cred.certificateNames[0] ?? (cred.tokenSha256 ? 'token' : 'anonymous'), `${action}-refused`, {
          service,
          address,
          peer: req.ip,
          reason: err.message,
        });
      }
      throw err;
    }
  };
  app.put<Params>('/v1/services/:service/endpoints/:address', async (req) => {
    const identity = who(req, 'register');
    const health = api.membership.heartbeat(
      req.params.service,
      { address: req.params.address, ...body(req.body) },
      identity,
    );
    return { service: req.params.service, address: req.params.address, state: health };
  });
  app.post<Params>('/v1/services/:service/endpoints/:address/drain', async (req) => {
    const identity = who(req, 'drain');
    api.membership.drain(req.params.service, req.params.address);
    api.audit(identity, 'drain', { service: req.params.service, address: req.params.address });
    return { service: req.params.service, address: req.params.address, state: 'draining' };
  });
  app.delete<Params>('/v1/services/:service/endpoints/:address', async (req) => {
    const identity = who(req, 'deregister');
    api.membership.deregister(req.params.service, req.params.address);
    api.audit(identity, 'deregister', { service: req.params.service, address: req.params.address });
    return { service: req.params.service, address: req.params.address, state: 'gone' };
  });
}
