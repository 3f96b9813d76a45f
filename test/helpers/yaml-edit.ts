import { readFileSync, writeFileSync } from 'node:fs';
import { parseAllDocuments, stringify } from 'yaml';

export type Doc = Record<string, any>;

/** Rewrites the documents of a multi-document YAML file in place, as an operator's edit would. */
export function editYamlDocs(file: string, edit: (docs: Doc[]) => void): void {
  const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as Doc);
  edit(docs);
  writeFileSync(file, docs.map((d) => stringify(d)).join('---\n'));
}

export function docOf(docs: Doc[], kind: string, name: string): Doc {
  const d = docs.find((x) => x.kind === kind && x.name === name);
  if (!d) throw new Error(`no ${kind}/${name}`);
  return d;
}
