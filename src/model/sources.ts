import type { Diagnostic } from '../shared/diagnostics.ts';

/** One YAML document of one file, already converted to plain data. */
export interface SourceDocument {
  file: string;
  /** Index of the document inside its file (multi-document files). */
  index: number;
  /** 1-based line where the document's content starts. */
  line: number;
  value: unknown;
}

export interface ParsedFile {
  file: string;
  /** sha256 of the file's bytes. */
  hash: string;
  /** Kept so locations can be computed lazily (only when a diagnostic needs one). */
  text: string;
  documents: SourceDocument[];
  diagnostics: Diagnostic[];
}

/** A whole config tree, read at one moment. */
export interface SourceSet {
  /** Absolute directory the tree was read from. */
  root: string;
  /** sha256 over (path, file hash) pairs in path order. */
  treeHash: string;
  files: ParsedFile[];
  /** Tree-level problems (unreadable directory, limits exceeded, ...). */
  diagnostics: Diagnostic[];
  /**
   * Set when a read failed for a reason that says nothing about the tree (read-tree.ts,
   * `passingReadError`): `files` is then empty and the tree must be read again, not judged.
   */
  incomplete?: string;
}
