/**
 * Parsed YAML files kept across restarts, by path and content hash (migrations/0007): a restart, or
 * the first push after one, parses only the files that changed. The documents are stored with v8's
 * serializer, which keeps every value a parse produces (NaN, Infinity, -0), where JSON would not.
 * Rows written by another version of the parser are never read, and are dropped at the next save.
 */
import { deserialize, serialize } from 'node:v8';
import type { ParsedFile } from '../model/sources.ts';
import type { ParsedFileStore, StoredParse } from '../source/source-cache.ts';
import { packageVersion } from '../shared/paths.ts';
import type { Sqlite } from './sqlite.ts';

/**
 * Bump when src/source/parse-yaml.ts or src/source/fast-yaml.ts changes what a parse yields
 * (limits, diagnostics, values, which files take the fast path).
 */
const PARSE_FORMAT = 1;

/** Both parsers a parse may come from: a new version of either could give another answer for a file. */
function parserId(): string {
  return `yaml@${packageVersion('yaml')}+js-yaml@${packageVersion('js-yaml')}/${PARSE_FORMAT}`;
}

export class ParseStore implements ParsedFileStore {
  private readonly parser = parserId();
  private readonly select;
  private readonly exists;

  constructor(private readonly db: Sqlite) {
    const row = 'FROM parsed_files WHERE file = ? AND hash = ? AND parser = ?';
    this.select = db.prepare(`SELECT data ${row}`).pluck();
    this.exists = db.prepare(`SELECT 1 ${row}`).pluck();
  }

  has(file: string, hash: string): boolean {
    return this.exists.get(file, hash, this.parser) !== undefined;
  }

  get(file: string, hash: string): StoredParse | undefined {
    const data = this.select.get(file, hash, this.parser) as Buffer | undefined;
    return data && (deserialize(data) as StoredParse);
  }

  save(fresh: readonly ParsedFile[], live: readonly ParsedFile[]): void {
    const keys = JSON.stringify(live.map((f) => `${f.file}\u0000${f.hash}`));
    this.db.transaction(() => {
      const put = this.db.prepare('INSERT OR REPLACE INTO parsed_files (file, hash, parser, data) VALUES (?, ?, ?, ?)');
      for (const f of fresh)
        put.run(f.file, f.hash, this.parser, serialize({ documents: f.documents, diagnostics: f.diagnostics }));
      const isLive = 'file || char(0) || hash IN (SELECT value FROM json_each(?))';
      this.db.prepare(`DELETE FROM parsed_files WHERE parser != ? OR NOT (${isLive})`).run(this.parser, keys);
    })();
  }
}
