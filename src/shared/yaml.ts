/**
 * The `yaml` library, loaded as its ES-module build. yaml's Node build reads `process.env.LOG_TOKENS`
 * for every token and `process.env.LOG_STREAM` for every document (debug hooks of the library), and
 * in Node each `process.env` read is a call into the runtime: a large share of the time spent parsing
 * our files. The package's ES-module build (its "browser" entry: the same sources, same version) has
 * no such hooks and parses the same files faster.
 *
 * That build is many small modules, slower to load than the Node build, on the path of every restart
 * (the settings file is YAML). `npm run build` bundles it into one file of dist/vendor, named by
 * yaml's version, which loads faster than either; without a build (tests and tools under tsx) the
 * package's own files are loaded. The package does not export that path: it is found beside its
 * package.json. If a later version ships without it, the Node build is used. Every runtime use of
 * yaml in src/ goes through here, so one copy loads.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Yaml from 'yaml';
import { packageDir, packageVersion, projectPath } from './paths.ts';

const dir = packageDir('yaml');
/** Where `npm run build` writes the bundle. */
const bundled = projectPath('dist', 'vendor', `yaml-${packageVersion('yaml', dir)}.js`);
/** The ES-module builds, preferred in this order. */
const builds = [
  { build: 'bundled', file: bundled },
  { build: 'esm', file: join(dir, 'browser', 'index.js') },
] as const;
const found = builds.find((b) => existsSync(b.file));

/** What `npm run build` bundles, and where (src/packaging/build.ts). */
export const YAML_BUNDLE = { entryPoints: [builds[1].file], outfile: bundled };

/** Which build was loaded (a test checks that parsing reads no environment variable). */
export const YAML_BUILD: 'bundled' | 'esm' | 'node' = found?.build ?? 'node';

const yaml = (found ? await import(pathToFileURL(found.file).href) : await import('yaml')) as typeof Yaml;

export const { parse, parseAllDocuments, stringify, isMap, isPair, isScalar, isSeq } = yaml;
export const LineCounter = yaml.LineCounter;
export type LineCounter = Yaml.LineCounter;

/** A scalar tag of yaml's that resolves plain scalars by a test. */
export type PlainScalarTag = Yaml.ScalarTag & { test: RegExp };

/**
 * The tags by which yaml's core schema (the one every parse here uses) resolves a plain scalar, in
 * the order it tries them; a scalar none of them matches is a string. Read from yaml itself, so the
 * fast path (src/source/fast-yaml.ts) resolves scalars exactly as yaml does.
 */
export const YAML_CORE_PLAIN_TAGS: readonly PlainScalarTag[] = new yaml.Schema({ schema: 'core' }).tags.filter(
  (t): t is PlainScalarTag => t.default === true && 'test' in t && t.test instanceof RegExp,
);
