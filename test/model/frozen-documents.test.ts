/**
 * The caches of the write path take "the same document object" to mean "the same content", so the
 * documents handed to checks and translation are frozen: a change in place throws where it is made
 * instead of leaving a cache serving stale config (docs/architecture.md, "Same object, same content").
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ModelAssembler } from '../../src/model/assemble.ts';
import { packModel, unpackModel } from '../../src/store/model-pack.ts';
import { parseYamlFile } from '../../src/source/parse-yaml.ts';
import { translateGroup } from '../../src/translate/index.ts';

const TREE =
  'kind: Service\nname: web\nendpoints: [{ address: 10.0.0.1:80 }]\n---\n' +
  'kind: VirtualHost\nname: shop\ndomains: [shop.test]\nroutes:\n  - { match: { prefix: /a }, to: web }\n---\n' +
  'kind: Listener\nname: edge\nport: 8080\nvirtualHosts: [shop]\n';

const assembled = () => new ModelAssembler().assemble([parseYamlFile('/cfg/a.yaml', TREE)]).model;

test('a document of the model refuses changes, at any depth', () => {
  const model = assembled();
  const web = model.services[0] as any;
  assert.throws(() => (web.connectTimeout = '9s'), TypeError);
  assert.throws(() => web.endpoints.push({ address: '10.0.0.2:80' }), TypeError);
  const route = (model.virtualHosts[0] as any).routes[0];
  assert.throws(() => (route.match.prefix = '/b'), TypeError);
  assert.is(route.match.prefix, '/a');
});

test('a translation that changes its input fails instead of serving stale config', () => {
  const model = assembled();
  const listener = model.listeners[0] as any;
  // What a translator that "normalised" a document in place would do.
  assert.throws(() => (listener.address ??= '0.0.0.0'), TypeError);
  // The real translation reads the same frozen documents without changing them.
  assert.ok(translateGroup(model, 'default'));
});

test('documents read back from the store are frozen too', () => {
  const model = assembled();
  const packed = packModel(model);
  const chunks = new Map(packed.chunks.map((c) => [c.hash, c.json]));
  const back = unpackModel(packed.skeleton, (hashes) => new Map(hashes.map((h) => [h, chunks.get(h)!])));
  assert.throws(() => ((back.services[0] as any).name = 'other'), TypeError);
});

test.run();
