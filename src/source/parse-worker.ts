/**
 * A parse worker (src/source/parse-pool.ts): parses the files it is sent and answers with what a
 * parse holds beyond the text, which the main thread already has.
 */
import { parentPort } from 'node:worker_threads';
import type { ParsedFile } from '../model/sources.ts';
import { parseYamlFile } from './parse-yaml.ts';

export interface ParseJob {
  file: string;
  text: string;
  hash: string;
  /** Its parse work (parseWork), when the reader weighed it already. */
  work?: number;
  /** The file's parse before it changed (main thread only: never sent to a worker). */
  previous?: ParsedFile;
}

parentPort?.on('message', (jobs: ParseJob[]) => {
  parentPort!.postMessage(
    jobs.map((j) => {
      const { documents, diagnostics } = parseYamlFile(j.file, j.text, j.hash);
      return { documents, diagnostics };
    }),
  );
});
