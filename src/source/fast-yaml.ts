/**
 * The fast path of the source stage's parse: js-yaml's event parser and constructor, for files that
 * keep to plain YAML. js-yaml builds the values of a tree many times faster than yaml, which builds
 * a full document model with positions and comments on the way, which only an error report needs.
 *
 * yaml stays the parser of record: every file outside the fast path, every file with any problem,
 * and every location of every diagnostic (src/model/yaml-locate.ts) go through it. The fast path
 * gives a file's documents only when it can vouch that yaml would give the same ones:
 *
 * - plain scalars resolve through yaml's own core-schema tags (the same tests, in the same order,
 *   the same values);
 * - mappings are built as yaml builds them (string keys only, `__proto__` and other inherited names
 *   as own properties);
 * - anything yaml treats with options or warnings of its own goes to yaml: anchors and aliases
 *   (yaml bounds their expansion), tags, directives, non-string keys, duplicate keys, documents that
 *   are not mappings (empty ones included: yaml places their line differently), a flow collection
 *   closed at the start of a line (yaml warns when it is not indented), document end markers, tabs
 *   in indentation, a carriage return alone, and any text js-yaml refuses.
 *
 * test/source/fast-yaml.test.ts checks that promise on mutated config files: wherever the fast path
 * answers, yaml gives the same values and lines, and no problem.
 */
import {
  constructFromEvents,
  defineMappingTag,
  defineScalarTag,
  EVENT_ID,
  FAILSAFE_SCHEMA,
  NOT_RESOLVED,
  parseEvents,
  type Event,
} from 'js-yaml';
import { isScalar, YAML_CORE_PLAIN_TAGS } from '../shared/yaml.ts';

/** One document of a file, as the fast path read it. */
export interface PlainDocument {
  /** Index of the document in its file. */
  index: number;
  /** 1-based line where the document's mapping starts (where yaml's `contents.range[0]` is). */
  line: number;
  value: Record<string, unknown>;
}

/** yaml's integer resolver reads this option; fleetxds never asks for BigInts. */
const INT_OPTIONS = { intAsBigInt: false };
/** A tag that reports a problem sends the file to yaml (the constructor's throw is caught below). */
const refuse = (message: string): never => {
  throw new Error(message);
};

/** Matches what any of yaml's core tags matches: most plain scalars are strings, which one test turns away. */
const ANY_CORE_TAG = YAML_CORE_PLAIN_TAGS.every((t) => t.test.flags === '')
  ? new RegExp(YAML_CORE_PLAIN_TAGS.map((t) => `(?:${t.test.source})`).join('|'))
  : /(?:)/;

/** A plain scalar resolved as yaml's core schema resolves it: its first tag whose test matches. */
const yamlCoreScalar = defineScalarTag<unknown>('tag:fleetxds:yaml-core-plain-scalar', {
  implicit: true,
  implicitFirstChars: null,
  resolve(source) {
    if (!ANY_CORE_TAG.test(source)) return NOT_RESOLVED;
    for (const tag of YAML_CORE_PLAIN_TAGS) {
      if (!tag.test.test(source)) continue;
      const value: unknown = tag.resolve(source, refuse, INT_OPTIONS);
      return isScalar(value) ? value.value : value;
    }
    return NOT_RESOLVED;
  },
  identify: () => false,
});

/** Why a mapping was refused; any refusal sends the file to yaml. */
const NOT_A_STRING_KEY = 'a key that is not a string';

/** A mapping as yaml's toJS builds one (src: yaml's addPairToJSMap, for string keys). */
const yamlObjectMap = defineMappingTag<Record<string, unknown>>('tag:yaml.org,2002:map', {
  create: () => ({}),
  addPair(map, key, value) {
    if (typeof key !== 'string') return NOT_A_STRING_KEY;
    if (key in map) Object.defineProperty(map, key, { value, writable: true, enumerable: true, configurable: true });
    else map[key] = value;
    return '';
  },
  has: (map, key) => typeof key === 'string' && Object.hasOwn(map, key),
  keys: (map) => Object.keys(map),
  get: (map, key) => map[key as string],
  identify: () => false,
});

const SCHEMA = FAILSAFE_SCHEMA.withTags(yamlObjectMap, yamlCoreScalar);
/** Deeper than any config; a deeper file is parsed by yaml, which reports it. */
const MAX_DEPTH = 64;
/**
 * Lines left to yaml: `]` or `}` first on a line (yaml warns when such an end is not indented past
 * its parent), `...` document end markers (after one, yaml counts an empty document where js-yaml
 * counts none), and a tab in a line's leading white space (yaml refuses some that js-yaml takes).
 */
const LEFT_TO_YAML = /^(?:[ \t]*[\]}]|\.\.\.|[ \t]*\t)/m;
/** A carriage return that does not end a line (yaml and js-yaml disagree on where its line ends). */
const LONE_CR = /\r(?!\n)/;
const NONE = -1;
const AMPERSAND = 0x26;
const BANG = 0x21;

/**
 * A cheap guess, before parsing, that a file will be left to yaml: it holds an `&` or a `!`, the
 * marks of anchors and tags (the parse pool weighs such files more). The other reasons above are
 * rare in config and not guessed.
 */
export function likelyLeftToYaml(text: string | Uint8Array): boolean {
  return typeof text === 'string' ? /[&!]/.test(text) : text.includes(AMPERSAND) || text.includes(BANG);
}

/**
 * The documents of `text`, or undefined when the file needs yaml (see the module comment). Never
 * throws: any failure of the fast path is an answer of undefined.
 */
export function loadPlainYaml(text: string): PlainDocument[] | undefined {
  if (LEFT_TO_YAML.test(text) || LONE_CR.test(text) || text.charCodeAt(0) === 0xfeff) return undefined;
  let events: Event[];
  try {
    events = parseEvents(text, { maxDepth: MAX_DEPTH });
  } catch {
    return undefined;
  }
  const starts = documentStarts(events);
  if (!starts) return undefined;
  let values: unknown[];
  try {
    values = constructFromEvents(events, { source: text, schema: SCHEMA, maxAliases: 0 });
  } catch {
    return undefined;
  }
  if (values.length !== starts.length) return undefined;
  const lines = linesAt(text, starts);
  return values.map((value, index) => ({ index, line: lines[index]!, value: value as Record<string, unknown> }));
}

/**
 * The offset where each document's root mapping starts, or undefined when any event uses a
 * feature left to yaml, or a document's root is not a mapping.
 */
function documentStarts(events: readonly Event[]): number[] | undefined {
  const starts: number[] = [];
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    switch (e.type) {
      case EVENT_ID.DOCUMENT: {
        const root = events[i + 1];
        if (e.directives.length || root?.type !== EVENT_ID.MAPPING) return undefined;
        starts.push(root.start);
        break;
      }
      case EVENT_ID.ALIAS:
        return undefined;
      case EVENT_ID.POP:
        break;
      default:
        if (e.anchorStart !== NONE || e.tagStart !== NONE) return undefined;
    }
  }
  return starts;
}

/** 1-based lines of ascending offsets (yaml counts a line at each `\n`). */
function linesAt(text: string, offsets: readonly number[]): number[] {
  const lines: number[] = [];
  let line = 1;
  let scanned = 0;
  for (const offset of offsets) {
    for (let k = text.indexOf('\n', scanned); k !== -1 && k < offset; k = text.indexOf('\n', k + 1)) line++;
    scanned = Math.max(scanned, offset);
    lines.push(line);
  }
  return lines;
}
