/**
 * A model stored as per-source-file chunks, content-addressed (src/model/files.ts): a push that
 * changed one file stores one new chunk; the version row names its chunks. Reading a version back
 * gives the model with its files and origins, so hashing or storing it again serializes nothing.
 */
import { deepFreeze } from '../shared/freeze.ts';
import {
  knownChunk,
  modelFiles,
  modelSkeleton,
  chunkOf,
  setModelFiles,
  type Chunk,
  type ModelFile,
} from '../model/files.ts';
import {
  byName,
  emptyModel,
  LIST_OF,
  originOf,
  recordOrigin,
  type Doc,
  type DocKind,
  type Model,
  type ModelListName,
  type Origin,
} from '../model/types.ts';

export interface PackedModel {
  /** What the version row stores. */
  skeleton: string;
  /** Every chunk the skeleton names (the store inserts those it does not have). */
  chunks: readonly Chunk[];
  /** The head documents (see HEAD_KINDS), with their origins. */
  head: string;
}

/**
 * What a restart needs before it serves: which group a node is in, which secrets to read, a
 * rollout's policy. Stored apart so the rest of the model (thousands of services) is read later.
 */
const HEAD_KINDS: readonly DocKind[] = ['NodeGroup', 'Secret', 'Rollout'];

export function packModel(model: Model): PackedModel {
  const head = HEAD_KINDS.flatMap((kind) =>
    ((model[LIST_OF[kind]] ?? []) as Doc[]).map((doc) => [kind, doc, originOf(doc) ?? null]),
  );
  return { skeleton: modelSkeleton(model), chunks: modelFiles(model).map(chunkOf), head: JSON.stringify(head) };
}

/** The head documents of a stored model (packModel), as a model with only those lists. */
export function unpackHead(headJson: string): Model {
  const model = emptyModel();
  for (const [kind, doc, origin] of JSON.parse(headJson) as [DocKind, Doc, Origin | null][]) {
    ((model[LIST_OF[kind]] ??= []) as Doc[]).push(deepFreeze(doc));
    if (origin) recordOrigin(doc, origin);
  }
  return model;
}

interface Skeleton {
  packed: 1;
  schemaVersion: Model['schemaVersion'];
  chunks: string[];
}

const KIND_OF = Object.fromEntries(Object.entries(LIST_OF).map(([kind, list]) => [list, kind])) as Record<
  ModelListName,
  DocKind
>;

/** The model a version row stores: packed (chunks read with `chunks`) or, for older rows, whole. */
export function unpackModel(modelJson: string, chunks: (hashes: string[]) => Map<string, string>): Model {
  const parsed = JSON.parse(modelJson) as (Model & { origins?: Record<string, Origin> }) | Skeleton;
  if (!('packed' in parsed)) return wholeModel(parsed);
  const texts = chunks(parsed.chunks);
  const model = emptyModel();
  model.schemaVersion = parsed.schemaVersion;
  const files: ModelFile[] = [];
  for (const hash of parsed.chunks) {
    const text = texts.get(hash);
    if (text === undefined) throw new Error(`stored model chunk ${hash.slice(0, 12)} is missing`);
    const chunk = JSON.parse(text) as { file: string; docs: [ModelListName, Doc][]; origins: [string, Origin][] };
    const origins = new Map(chunk.origins);
    const docs: ModelFile['docs'][number][] = [];
    for (const [list, doc] of chunk.docs) {
      ((model[list] ??= []) as Doc[]).push(deepFreeze(doc));
      const origin = origins.get(`${KIND_OF[list]}/${doc.name}`);
      if (origin) recordOrigin(doc, origin);
      docs.push({ kind: KIND_OF[list], doc });
    }
    const file: ModelFile = { file: chunk.file, docs };
    knownChunk(file, { hash, json: text });
    files.push(file);
  }
  for (const list of Object.values(LIST_OF)) (model[list] as { name: string }[] | undefined)?.sort(byName);
  return setModelFiles(model, files);
}

/** A row from before packing: the whole model, with its origins by `Kind/name`. */
function wholeModel(stored: Model & { origins?: Record<string, Origin> }): Model {
  const { origins = {}, ...model } = stored;
  for (const [kind, list] of Object.entries(LIST_OF))
    for (const doc of (model[list] ?? []) as Doc[]) {
      const origin = origins[`${kind}/${doc.name}`];
      if (origin) recordOrigin(deepFreeze(doc), origin);
    }
  return model;
}
