/**
 * The registration API, on the REST listener (HTTPS with client certificates, or bearer tokens):
 *
 *   PUT    /v1/services/:service/endpoints/:address   register or heartbeat {weight, region, zone, subZone, health}
 *   POST   /v1/services/:service/endpoints/:address/drain
 *   DELETE /v1/services/:service/endpoints/:address
 *
 * The caller proves who it is with a client certificate whose name the Service's `registration`
 * allows, or a bearer token whose sha256 it lists. An endpoint belongs to the identity that
 * registered it. What an allowed identity does is audited; a refused call is only counted
 * (`refused`): anyone can make one, and the audit log keeps operators' decisions.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Credentials, Membership, Origin, RegisterRequest } from '../../membership/membership.ts';
import { sanNames, verifiedPeerCertificate } from '../../security/node-identity.ts';
import { bearerDigest } from '../../security/tokens.ts';
import { canonicalEndpoint } from '../../shared/addresses.ts';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import { MAX_LOCALITY_NAME } from '../../features/locality/schema.ts';

export type RegistrationAction = 'register' | 'drain' | 'deregister';

/** Why a call was refused: without an allowed credential, or by the policy for an allowed one. */
export type RefusalReason = 'unauthenticated' | 'forbidden';

export interface RegistrationApi {
  membership: Membership;
  /** Appends an allowed identity's action to the audit log. */
  audit(actor: string, action: string, detail: unknown): void;
  /** Counts a refused call (a metric and a rate-limited log line, never the audit log). */
  refused(action: RegistrationAction, reason: RefusalReason, message: string): void;
}

/** The names of a verified client certificate (URI and DNS SANs), and the sha256 of a bearer token. */
function credentialsOf(req: FastifyRequest): Credentials {
  const digest = bearerDigest(req.headers.authorization);
  return {
    certificateNames: sanNames(verifiedPeerCertificate(req.raw.socket), ['URI', 'DNS']),
    ...(digest && { tokenSha256: digest.toString('hex') }),
  };
}

/** The connection's address and the IP SANs of its verified certificate. */
function originOf(req: FastifyRequest): Origin {
  return {
    peer: req.raw.socket.remoteAddress,
    certificateIps: sanNames(verifiedPeerCertificate(req.raw.socket), ['IP Address']),
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
  for (const k of ['region', 'zone', 'subZone'] as const)
    if (b[k] !== undefined) {
      if (typeof b[k] !== 'string' || !b[k].length || b[k].length > MAX_LOCALITY_NAME)
        throw new FleetError(ErrorCodes.BAD_REQUEST, `${k} is a string of 1 to ${MAX_LOCALITY_NAME} characters`);
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
  /**
   * Runs `act` as the caller's identity for the service. A refusal (403) of an allowed identity is
   * audited; every refusal is counted.
   */
  const as = <T>(req: FastifyRequest<Params>, action: RegistrationAction, act: (identity: string) => T): T => {
    const { service, address } = req.params;
    if (!SERVICE.test(service)) throw new FleetError(ErrorCodes.BAD_REQUEST, 'not a service name');
    let identity: string | undefined;
    try {
      identity = api.membership.authorize(service, credentialsOf(req));
      return act(identity);
    } catch (err) {
      if (err instanceof FleetError && err.code === ErrorCodes.FORBIDDEN) {
        api.refused(action, identity ? 'forbidden' : 'unauthenticated', err.message);
        if (identity) api.audit(identity, `${action}-refused`, { service, address, peer: req.ip, reason: err.message });
      }
      throw err;
    }
  };
  const canonical = (address: string) => canonicalEndpoint(address) ?? address;
  /**
   * A drain or removal is answered once the other replicas can read it; when the shared store is
   * away it says so (this replica has it, stored, and shares it when the store is back).
   */
  const sharedOrNot = async () =>
    (await api.membership.shared()) ? {} : { shared: false, note: 'not shared with the other replicas yet' };
  app.put<Params>('/v1/services/:service/endpoints/:address', async (req) => {
    const { service, address } = req.params;
    const state = as(req, 'register', (identity) =>
      api.membership.heartbeat(service, { address, ...body(req.body) }, identity, originOf(req)),
    );
    return { service, address: canonical(address), state };
  });
  app.post<Params>('/v1/services/:service/endpoints/:address/drain', async (req) => {
    const { service, address } = req.params;
    as(req, 'drain', (identity) => {
      api.membership.drain(service, address, identity);
      api.audit(identity, 'drain', { service, address: canonical(address) });
    });
    return { service, address: canonical(address), state: 'draining', ...(await sharedOrNot()) };
  });
  app.delete<Params>('/v1/services/:service/endpoints/:address', async (req) => {
    const { service, address } = req.params;
    as(req, 'deregister', (identity) => {
      api.membership.deregister(service, address, identity);
      api.audit(identity, 'deregister', { service, address: canonical(address) });
    });
    return { service, address: canonical(address), state: 'gone', ...(await sharedOrNot()) };
  });
}
