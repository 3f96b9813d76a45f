/**
 * The `yaml` library, loaded as its ES-module build. yaml's Node build reads `process.env.LOG_TOKENS`
 * for every token and `process.env.LOG_STREAM` for every document (debug hooks of the library), and
 * in Node each `process.env` read is a call into the runtime: about a fifth of the time spent parsing
 * our files. The package's ES-module build (its "browser" entry: the same sources, same version) has
 * no such hooks and parses the same files 22–25% faster. The package does not export that path, so it
 * is found beside the package's own package.json (which it exports); if a later version ships without
 * it, the Node build is used. Every runtime use of yaml in src/ goes through here, so one copy loads.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Yaml from 'yaml';

const esmBuild = join(dirname(createRequire(import.meta.url).resolve('yaml/package.json')), 'browser', 'index.js');

/** Which build was loaded (a test checks that parsing reads no environment variable). */
export const YAML_BUILD: 'esm' | 'node' = existsSync(esmBuild) ? 'esm' : 'node';

const yaml = (YAML_BUILD === 'esm' ? await import(pathToFileURL(esmBuild).href) : await import('yaml')) as typeof Yaml;

export const { parse, parseAllDocuments, stringify, isMap, isPair, isScalar, isSeq } = yaml;
export const LineCounter = yaml.LineCounter;
export type LineCounter = Yaml.LineCounter;
