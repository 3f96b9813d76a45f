/**
 * A model by source file: the unit it is hashed and stored by. Each file's documents form one
 * chunk (JSON, content-addressed); the model hash is the hash of the chunk hashes in path order.
 * Chunks are computed once per file object: the assembler hands back the same `ModelFile` for a
 * file whose parse is unchanged, so hashing and packing a model after a one-file push costs that
 * file, not the tree.
 */
import { sha256Hex } from '../shared/hash.ts';
import { LIST_OF, originOf, type Doc, type DocKind, type Model, type Origin } from './types.ts';

/** One source file's documents in a model, in file order. Immutable. */
export interface ModelFile {
  readonly file: string;
  readonly docs: readonly { readonly kind: DocKind; readonly doc: Doc }[];
}

/** A file's documents as stored (src/store/model-pack.ts reads them back). */
export interface Chunk {
  readonly hash: string;
  readonly json: string;
}

const FILES = new WeakMap<Model, readonly ModelFile[]>();
const CHUNKS = new WeakMap<ModelFile, Chunk>();
const SKELETONS = new WeakMap<Model, { skeleton: string; hash: string }>();

/** Records the files a model was made of (in path order): set by whoever makes the model. */
export function setModelFiles(model: Model, files: readonly ModelFile[]): Model {
  FILES.set(model, files);
  return model;
}

/**
 * The model's files in path order. Known for models the assembler made or the store read back;
 * otherwise (a model built by hand) grouped from the documents' origins.
 */
export function modelFiles(model: Model): readonly ModelFile[] {
  let files = FILES.get(model);
  if (files) return files;
  const byFile = new Map<string, { kind: DocKind; doc: Doc; origin?: Origin }[]>();
  for (const [kind, list] of Object.entries(LIST_OF) as [DocKind, (typeof LIST_OF)[DocKind]][])
    for (const doc of (model[list] ?? []) as Doc[]) {
      const origin = originOf(doc);
      const file = origin?.file ?? '';
      let docs = byFile.get(file);
      if (!docs) byFile.set(file, (docs = []));
      docs.push({ kind, doc, origin });
    }
  files = [...byFile.keys()]
    .sort()
    .map((file) => ({ file, docs: byFile.get(file)!.sort((a, b) => (a.origin?.index ?? 0) - (b.origin?.index ?? 0)) }));
  FILES.set(model, files);
  return files;
}

/** A file's chunk: its documents (by model list), and where each is, as JSON with its hash. */
export function chunkOf(f: ModelFile): Chunk {
  let c = CHUNKS.get(f);
  if (!c) {
    const json = JSON.stringify({
      file: f.file,
      docs: f.docs.map((d) => [LIST_OF[d.kind], d.doc]),
      origins: f.docs.flatMap((d) => {
        const o = originOf(d.doc);
        return o ? [[`${d.kind}/${d.doc.name}`, o]] : [];
      }),
    });
    c = { hash: sha256Hex(json), json };
    CHUNKS.set(f, c);
  }
  return c;
}

/** A chunk read back from the store: known, so it is not serialized or hashed again. */
export function knownChunk(f: ModelFile, chunk: Chunk): void {
  CHUNKS.set(f, chunk);
}

/** The skeleton and its hash, computed once per model (the apply hashes it, the store writes it). */
function skeletonOf(model: Model): { skeleton: string; hash: string } {
  let s = SKELETONS.get(model);
  if (!s) {
    const skeleton = JSON.stringify({
      packed: 1,
      schemaVersion: model.schemaVersion,
      chunks: modelFiles(model).map((f) => chunkOf(f).hash),
    });
    SKELETONS.set(model, (s = { skeleton, hash: sha256Hex(skeleton) }));
  }
  return s;
}

/** What a version row stores for the model: the schema version and its chunks' hashes. */
export function modelSkeleton(model: Model): string {
  return skeletonOf(model).skeleton;
}

/**
 * The model's content hash: the hash of its stored skeleton, which names each file's chunk by
 * hash. The same documents at the same places give the same hash on every replica.
 */
export function modelHash(model: Model): string {
  return skeletonOf(model).hash;
}
