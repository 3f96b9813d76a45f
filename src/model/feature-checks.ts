/**
 * The checks of the features in src/features/, run where the checker visits listeners, virtual
 * hosts and routes; their diagnostics go to the document's file:line like every other.
 */
import type { Feature, FeatureCheck } from '../features/kit/feature.ts';
import { FEATURES } from '../features/registry.ts';
import type { PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef, NeedService } from './diagnostic-sink.ts';
import { checkRegex } from './regex-check.ts';
import type { ListenerDoc, RouteDoc, ServiceDoc, VirtualHostDoc } from './schema.ts';

/**
 * A feature's view of the checker, for document `r`; `need` looks services up and records those it
 * cites. Without it, a check that looks a service up is a mistake in the code: it throws.
 */
export function featureCheck(r: DocRef, sink: DiagnosticSink, need?: NeedService): FeatureCheck {
  return {
    error: (code, path, message) => sink.error(code, r, path, message),
    warn: (code, path, message) => sink.warn(code, r, path, message),
    regex: (pattern, path) => checkRegex(pattern, [...path], r, sink),
    service: (path, name) => {
      if (!need) throw new Error(`a check of ${r.kind}/${r.name} looked service "${name}" up without a lookup`);
      return need(r, [...path], name);
    },
  };
}

/** The features as the checker runs them: the model's documents fit every feature's checks (checked here). */
const CHECKED: readonly Feature<ListenerDoc, VirtualHostDoc, RouteDoc, ServiceDoc>[] = FEATURES;

export function checkListenerFeatures(l: ListenerDoc, c: FeatureCheck): void {
  for (const f of CHECKED) f.checks?.listener?.(l, c);
}

export function checkVirtualHostFeatures(v: VirtualHostDoc, c: FeatureCheck): void {
  for (const f of CHECKED) f.checks?.virtualHost?.(v, c);
}

/** What each virtual host asks of each listener that carries it, reported on the virtual host (`c`). */
export function checkCarriedFeatures(l: ListenerDoc, v: VirtualHostDoc, c: FeatureCheck): void {
  for (const f of CHECKED) f.checks?.carried?.(l, v, c);
}

export function checkServiceFeatures(s: ServiceDoc, c: FeatureCheck): void {
  for (const f of CHECKED) f.checks?.service?.(s, c);
}

export function checkRouteFeatures(route: RouteDoc, path: readonly PathSegment[], c: FeatureCheck): void {
  for (const f of CHECKED) f.checks?.route?.(route, path, c);
}
