import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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

/**
 * Where `npm run build` writes the loaded protos as a protobufjs JSON descriptor: read back in about
 * a third of the time the .proto files take to parse (a restart answers sooner). Generated, so it
 * lives in dist/, never in the repository.
 */
export const DESCRIPTOR_FILE = projectPath('dist', 'proto', 'envoy.json');

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

function manifestOf(): { manifest: RootsManifest; fingerprint: string } {
  const text = readFileSync(projectPath('proto', 'roots.json'), 'utf8');
  const manifest = JSON.parse(text) as RootsManifest;
  const versions = `${packageVersion(manifest.package)}\n${packageVersion('protobufjs')}`;
  return { manifest, fingerprint: sha256Hex(`${text}\n${versions}`) };
}

/**
 * The Envoy v3 protos, loaded once per process with keepCase, so message field names are Envoy's
 * snake_case names: from the build's descriptor when it matches the protos, else parsed from the
 * .proto files (about 120 ms). Well-known google/protobuf types come from protobufjs itself.
 */
export function protoRoot(): protobuf.Root {
  return (root ??= loadProtos(DESCRIPTOR_FILE).root);
}

/** Loads the protos afresh (not cached): from `descriptorFile` if it matches them. */
export function loadProtos(descriptorFile: string): { root: protobuf.Root; from: 'descriptor' | 'protos' } {
  const { manifest, fingerprint } = manifestOf();
  if (existsSync(descriptorFile)) {
    const d = JSON.parse(readFileSync(descriptorFile, 'utf8')) as Descriptor;
    if (d.fingerprint === fingerprint && d.parsedOptions) {
      const r = protobuf.Root.fromJSON(d.root);
      for (const o of optionCarriers(r)) {
        const opts = d.parsedOptions[o.fullName];
        if (opts) o.parsedOptions = opts;
      }
      r.resolveAll();
      return { root: r, from: 'descriptor' };
    }
  }
  return { root: parseProtos(manifest), from: 'protos' };
}

/** Writes the descriptor of the protos (run by `npm run build`). */
export function writeProtoDescriptor(file = DESCRIPTOR_FILE): void {
  const { manifest, fingerprint } = manifestOf();
  const root = parseProtos(manifest);
  const parsedOptions: Record<string, ParsedOptions> = {};
  for (const o of optionCarriers(root)) if (o.parsedOptions?.length) parsedOptions[o.fullName] = o.parsedOptions;
  const descriptor: Descriptor = { fingerprint, root: root.toJSON(), parsedOptions };
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(descriptor));
}

function parseProtos(manifest: RootsManifest): protobuf.Root {
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
  r.loadSync(manifest.files, { keepCase: true });
  r.resolveAll();
  return r;
}

if (import.meta.url === `file://${process.argv[1]}`) writeProtoDescriptor();

export function lookupType(fullName: string): protobuf.Type {
  return protoRoot().lookupType(fullName);
}
