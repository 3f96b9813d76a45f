import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import protobuf from 'protobufjs';
import { sha256Hex } from '../shared/hash.ts';
import { packageDir, packageVersion, projectPath } from '../shared/paths.ts';

interface RootsManifest {
  package: string;
  includeDirs: string[];
  files: string[];
}

/** The Envoy protos, loaded once per process (immutable once loaded). */
let root: protobuf.Root | undefined;
/** The discovery requests' messages alone (see REQUEST_TYPES), loaded once per process. */
let requestRoot: protobuf.Root | undefined;

/**
 * Where `npm run build` writes the loaded protos as a protobufjs JSON descriptor: read back in about
 * a third of the time the .proto files take to parse (a restart answers sooner). Generated, so it
 * lives in dist/, never in the repository.
 */
export const DESCRIPTOR_FILE = projectPath('dist', 'proto', 'envoy.json');

/**
 * The messages a server decodes from its clients, and everything they use (Node, Struct, Status
 * and so on: a few dozen of the Envoy API's thousands). Written beside the descriptor, so a restart
 * decodes its first requests without loading every Envoy proto, which only the first
 * apply needs.
 */
export const REQUEST_TYPES = [
  'envoy.service.discovery.v3.DiscoveryRequest',
  'envoy.service.discovery.v3.DeltaDiscoveryRequest',
] as const;
export const REQUEST_DESCRIPTOR_FILE = projectPath('dist', 'proto', 'requests.json');

interface Descriptor {
  /** Which protos (roots.json, their package's and protobufjs's versions) it was made from. */
  fingerprint: string;
  root: protobuf.INamespace;
  /**
   * `parsedOptions` by full name of the field, oneof or message carrying them. protobufjs's toJSON
   * leaves them out, and they hold every protoc-gen-validate rule (src/xds/pgv.ts): a descriptor
   * without them loads protos that validate nothing.
   */
  parsedOptions: Record<string, ParsedOptions>;
}

type ParsedOptions = protobuf.ReflectionObject['parsedOptions'];

/** Every field, oneof and message under `ns`, with its full name. */
function* optionCarriers(ns: protobuf.NamespaceBase): Generator<protobuf.ReflectionObject> {
  for (const o of ns.nestedArray) {
    if (o instanceof protobuf.Type) {
      yield o;
      yield* o.fieldsArray;
      yield* o.oneofsArray;
    }
    if (o instanceof protobuf.Namespace) yield* optionCarriers(o);
  }
}

let roots: { manifest: RootsManifest; fingerprint: string } | undefined;

/** roots.json and the fingerprint of the protos it names (read once per process). */
function manifestOf(): { manifest: RootsManifest; fingerprint: string } {
  if (roots) return roots;
  const text = readFileSync(projectPath('proto', 'roots.json'), 'utf8');
  const manifest = JSON.parse(text) as RootsManifest;
  const versions = `${packageVersion(manifest.package)}\n${packageVersion('protobufjs')}`;
  return (roots = { manifest, fingerprint: sha256Hex(`${text}\n${versions}`) });
}

/** A descriptor written by `npm run build`, if there is one and it was made from these protos. */
function readDescriptor(file: string): Descriptor | undefined {
  if (!existsSync(file)) return undefined;
  const d = JSON.parse(readFileSync(file, 'utf8')) as Descriptor;
  return d.fingerprint === manifestOf().fingerprint ? d : undefined;
}

/**
 * The Envoy v3 protos, loaded once per process with keepCase, so message field names are Envoy's
 * snake_case names: from the build's descriptor when it matches the protos, else parsed from the
 * .proto files (slower: a start without a build). Well-known google/protobuf types come from protobufjs itself.
 */
export function protoRoot(): protobuf.Root {
  return (root ??= loadProtos(DESCRIPTOR_FILE).root);
}

/** Loads the protos afresh (not cached): from `descriptorFile` if it matches them. */
export function loadProtos(descriptorFile: string): { root: protobuf.Root; from: 'descriptor' | 'protos' } {
  const d = readDescriptor(descriptorFile);
  if (!d?.parsedOptions) return { root: parseProtos(manifestOf().manifest), from: 'protos' };
  const r = protobuf.Root.fromJSON(d.root);
  for (const o of optionCarriers(r)) {
    const opts = d.parsedOptions[o.fullName];
    if (opts) o.parsedOptions = opts;
  }
  r.resolveAll();
  return { root: r, from: 'descriptor' };
}

/** Writes the descriptor of the protos, and that of the request messages (run by `npm run build`). */
export function writeProtoDescriptor(file = DESCRIPTOR_FILE, requestFile = REQUEST_DESCRIPTOR_FILE): void {
  const { manifest, fingerprint } = manifestOf();
  const root = parseProtos(manifest);
  const parsedOptions: Record<string, ParsedOptions> = {};
  for (const o of optionCarriers(root)) if (o.parsedOptions?.length) parsedOptions[o.fullName] = o.parsedOptions;
  const descriptor: Descriptor = { fingerprint, root: root.toJSON(), parsedOptions };
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(descriptor));
  const requests: Descriptor = { fingerprint, root: subsetOf(root, REQUEST_TYPES), parsedOptions: {} };
  mkdirSync(dirname(requestFile), { recursive: true });
  writeFileSync(requestFile, JSON.stringify(requests));
}

/**
 * The JSON of `names` and every type and enum their fields use, each at its full name (so every
 * reference resolves as it does in the whole root). A type's own nested types are kept only if used.
 */
function subsetOf(whole: protobuf.Root, names: readonly string[]): protobuf.INamespace {
  const used = new Map<string, protobuf.Type | protobuf.Enum>();
  const visit = (t: protobuf.Type | protobuf.Enum) => {
    if (used.has(t.fullName)) return;
    used.set(t.fullName, t);
    if (t instanceof protobuf.Type)
      for (const f of t.fieldsArray) {
        f.resolve();
        if (f.resolvedType) visit(f.resolvedType);
      }
  };
  for (const n of names) visit(whole.lookupType(n));
  type Json = { nested?: Record<string, Json> } & Record<string, unknown>;
  const out: Json = {};
  for (const [fullName, t] of used) {
    const path = fullName.slice(1).split('.');
    let ns = out;
    for (const seg of path.slice(0, -1)) ns = (ns.nested ??= {})[seg] ??= {};
    const { nested: _notUsedUnlessListed, ...own } = t.toJSON() as unknown as Json;
    const last = path[path.length - 1]!;
    const before = (ns.nested ??= {})[last];
    ns.nested[last] = before?.nested ? { ...own, nested: before.nested } : own;
  }
  return out;
}

/**
 * The messages clients send (REQUEST_TYPES), from their own small descriptor when it matches the
 * protos; otherwise from the whole root.
 */
export function requestType(fullName: (typeof REQUEST_TYPES)[number]): protobuf.Type {
  requestRoot ??= loadRequestRoot(REQUEST_DESCRIPTOR_FILE) ?? protoRoot();
  return requestRoot.lookupType(fullName);
}

/** The request messages' root from `file`, if it was made from these protos. */
export function loadRequestRoot(file: string): protobuf.Root | undefined {
  const d = readDescriptor(file);
  if (!d) return undefined;
  const r = protobuf.Root.fromJSON(d.root);
  r.resolveAll();
  return r;
}

function emptyRoot(manifest: RootsManifest): protobuf.Root {
  const base = packageDir(manifest.package);
  const includeDirs = manifest.includeDirs.map((d) => join(base, d));
  const protobufDir = packageDir('protobufjs');
  const r = new protobuf.Root();
  r.resolvePath = (_origin: string, target: string) => {
    if (target.startsWith('google/protobuf/')) {
      return (protobuf.common as unknown as Record<string, unknown>)[target] ? target : join(protobufDir, target);
    }
    for (const dir of includeDirs) {
      const candidate = join(dir, target);
      if (existsSync(candidate)) return candidate;
    }
    return target;
  };
  return r;
}

function parseProtos(manifest: RootsManifest): protobuf.Root {
  const r = emptyRoot(manifest);
  r.loadSync(manifest.files, { keepCase: true });
  r.resolveAll();
  return r;
}

let everyMessage: protobuf.Root | undefined;

/**
 * Every v3 message of the Envoy API the package carries, for the types only an EnvoyPatch names
 * (a Lua filter, say): parsed on first need, about half a second, never for a tree without such a
 * patch. Files whose imports the package lacks (OpenCensus, OpenTelemetry's own protos) are left out.
 */
function envoyApiRoot(): protobuf.Root {
  if (everyMessage) return everyMessage;
  const { manifest } = manifestOf();
  const apiDir = join(packageDir(manifest.package), manifest.includeDirs[0]!);
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.proto') && p.includes('/v3/')) files.push(relative(apiDir, p));
    }
  };
  walk(join(apiDir, 'envoy'));
  const r = emptyRoot(manifest);
  for (const f of files.sort())
    try {
      r.loadSync(f, { keepCase: true });
    } catch {
      // An import the package does not carry: that file's messages stay unknown.
    }
  r.resolveAll();
  return (everyMessage = r);
}

export function lookupType(fullName: string): protobuf.Type {
  try {
    return protoRoot().lookupType(fullName);
  } catch (err) {
    if (!/^\.?envoy\./.test(fullName)) throw err;
    return envoyApiRoot().lookupType(fullName);
  }
}
