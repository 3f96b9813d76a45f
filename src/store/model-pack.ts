/**
 * A model stored as per-source-file chunks, content-addressed. A push that changed one file
 * stores one new chunk; the version row names its chunks. Chunks are rebuilt only for files whose
 * documents are not the very same objects as last time (parsed documents of unchanged files keep
 * their identity), so packing a 10,000-service model after a one-file change serializes one file.
 */
import { byName, emptyModel, LIST_OF, originKey, type Model, type ModelListName, type Origin } from '../model/types.ts';
import { sha256Hex } from '../shared/hash.ts';

interface Entry {
  list: ModelListName;
  key: string;
  doc: { name: string };
  /** Absent only for models built by hand (tests): they are kept in a chunk of their own. */
  origin?: Origin;
}

interface Chunk {
  docs: object[];
  /** Where each document is in its file: a chunk is reused only if they are unchanged too. */
  places: string;
  hash: string;
}

export interface PackedModel {
  /** What the version row stores. */
  skeleton: string;
  /** Chunks built by this call (the store inserts those it does not have). */
  built: { hash: string; json: string }[];
}

interface Skeleton {
  packed: 1;
  schemaVersion: Model['schemaVersion'];
  chunks: string[];
}

export class ModelPacker {
  private byFile = new Map<string, Chunk>();

  pack(model: Model): PackedModel {
    const files = new Map<string, Entry[]>();
    for (const [kind, list] of Object.entries(LIST_OF)) {
      for (const doc of (model[list] ?? []) as { name: string }[]) {
        const key = originKey(kind, doc.name);
        const origin = model.origins[key];
        const file = origin?.file ?? '';
        let entries = files.get(file);
        if (!entries) files.set(file, (entries = []));
        entries.push({ list, key, doc, origin });
      }
    }
    const built: PackedModel['built'] = [];
    const hashes: string[] = [];
    const seen = new Map<string, Chunk>();
    for (const file of [...files.keys()].sort()) {
      const entries = files.get(file)!.sort((a, b) => (a.origin?.index ?? 0) - (b.origin?.index ?? 0));
      const places = entries.map((e) => `${e.list}:${e.origin?.index}:${e.origin?.line}`).join(',');
      const last = this.byFile.get(file);
      let chunk = last;
      if (!last || last.places !== places || last.docs.some((d, i) => d !== entries[i]!.doc)) {
        const json = JSON.stringify({
          file,
          docs: entries.map((e) => [e.list, e.doc]),
          origins: entries.flatMap((e) => (e.origin ? [[e.key, e.origin]] : [])),
        });
        chunk = { docs: entries.map((e) => e.doc), places, hash: sha256Hex(json) };
        built.push({ hash: chunk.hash, json });
      }
      seen.set(file, chunk!);
      hashes.push(chunk!.hash);
    }
    this.byFile = seen;
    const skeleton: Skeleton = { packed: 1, schemaVersion: model.schemaVersion, chunks: hashes };
    return { skeleton: JSON.stringify(skeleton), built };
  }
}

/** The model a version row stores: packed (chunks read with `chunks`) or, for older rows, whole. */
export function unpackModel(modelJson: string, chunks: (hashes: string[]) => Map<string, string>): Model {
  const parsed = JSON.parse(modelJson) as Model | Skeleton;
  if (!('packed' in parsed)) return parsed;
  const texts = chunks(parsed.chunks);
  const model = emptyModel();
  model.schemaVersion = parsed.schemaVersion;
  for (const hash of parsed.chunks) {
    const text = texts.get(hash);
    if (text === undefined) throw new Error(`stored model chunk ${hash.slice(0, 12)} is missing`);
    const chunk = JSON.parse(text) as { docs: [ModelListName, object][]; origins: [string, Origin][] };
    for (const [list, doc] of chunk.docs) ((model[list] ??= []) as object[]).push(doc);
    for (const [key, origin] of chunk.origins) model.origins[key] = origin;
  }
  for (const list of Object.values(LIST_OF)) (model[list] as { name: string }[] | undefined)?.sort(byName);
  return model;
}
