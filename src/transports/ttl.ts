/**
 * Resources served with an xDS TTL: a proxy drops such a resource by itself unless fleetxds
 * renews it in time, so what is temporary ends even if fleetxds is gone. Only the overrides layer
 * has one (src/translate/runtime.ts), and only while it holds a value: Envoy clears a runtime layer
 * whose resource expires, which returns every key to the layers below. It is renewed at a third of
 * the TTL (two renewals may be lost before it lapses): over delta by a heartbeat (its name and
 * version without a body), over SotW by the resource again, since Envoy's SotW client does not
 * renew a TTL on a heartbeat. gRPC streams only: a REST poll answered "unchanged" would not renew
 * it, and a file never does.
 */
import { derive } from '../snapshot/derived.ts';
import type { EncodedResource } from '../snapshot/encoder.ts';
import { OVERRIDE_LAYER } from '../translate/runtime.ts';
import { DDR, DR, encodeAny, encodeResourceWrapper, lenField, RESOURCE_WRAPPER_URL } from '../xds/wire.ts';

export const DEFAULT_OVERRIDE_TTL_MS = 30_000;

/** Whether `r` is served with a TTL: the overrides layer, while it holds a value. */
export function servedWithTtl(r: EncodedResource): boolean {
  return r.kind === 'runtime' && r.name === OVERRIDE_LAYER && derive(r, 'ttl', '', holdsValues, undefined);
}

const holdsValues = (r: EncodedResource): boolean =>
  Object.keys((r.json.layer as Record<string, unknown> | undefined) ?? {}).length > 0;

/** Its `resources` entry of a SotW response: wrapped in a Resource with the TTL when it has one. */
export function sotwFramed(r: EncodedResource, ttlMs: number): Buffer {
  if (!servedWithTtl(r)) return r.framed;
  return derive(r, 'sotw-ttl', String(ttlMs), makeSotwTtl, ttlMs);
}

const makeSotwTtl = (r: EncodedResource, ttlMs: number): Buffer =>
  lenField(DR.resources, encodeAny(RESOURCE_WRAPPER_URL, encodeResourceWrapper(r.name, '', r.any, ttlMs)));

/** Its Resource of a delta response, with the TTL when it has one (undefined: the plain framing). */
export function deltaTtlFramed(r: EncodedResource, ttlMs: number): Buffer | undefined {
  if (!servedWithTtl(r)) return undefined;
  return derive(r, 'delta-ttl', String(ttlMs), makeDeltaTtl, ttlMs);
}

const makeDeltaTtl = (r: EncodedResource, ttlMs: number): Buffer =>
  lenField(DDR.resources, encodeResourceWrapper(r.name, r.version, r.any, ttlMs));

/** A delta heartbeat's Resource: the name and the version the client holds, no body. */
export function deltaHeartbeat(r: EncodedResource, ttlMs: number): Buffer {
  return derive(r, 'delta-heartbeat', String(ttlMs), makeDeltaHeartbeat, ttlMs);
}

const makeDeltaHeartbeat = (r: EncodedResource, ttlMs: number): Buffer =>
  lenField(DDR.resources, encodeResourceWrapper(r.name, r.version, undefined, ttlMs));

/** A stream's renewal timer: runs while its client holds a resource with a TTL. */
export class TtlRenewal {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly ttlMs: number,
    private readonly beat: () => void,
  ) {}

  /** On while `holding`; a stream calls it after each response of the type. */
  sync(holding: boolean): void {
    if (holding && !this.timer) {
      this.timer = setInterval(this.beat, Math.max(Math.floor(this.ttlMs / 3), 100));
      this.timer.unref();
    } else if (!holding && this.timer) this.stop();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
