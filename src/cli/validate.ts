import { formatDiagnostic, hasErrors } from '../shared/diagnostics.ts';
import { checkTree } from '../compile/check-tree.ts';
import { rmSync } from 'node:fs';
import { commandRunDir, EnvoyChecker } from '../compile/envoy-check.ts';
import { loadServerConfig } from '../config/server-config.ts';

/**
 * `fleetxds validate <dir>`: prints every problem, exits 1 on any error (usable in a pre-receive
 * hook). With `--envoy BINARY` (repeatable), or `--config` settings naming `envoyCheck.binaries`,
 * the real Envoy judges the produced resources too. With `--previous DIR`, a change that removes
 * most of a node group's listeners and clusters is refused (see removal-guard.ts).
 */
export async function validateCommand(
  dir: string,
  opts: { json?: boolean; envoy?: string[]; config?: string; previous?: string },
): Promise<number> {
  const binaries = [
    ...(opts.envoy ?? []),
    ...(opts.config ? (loadServerConfig(opts.config).envoyCheck?.binaries ?? []) : []),
  ];
  // --previous DIR: the tree this one replaces (the hook passes the branch's old commit), for the mass-removal rule.
  const against = opts.previous ? (await checkTree(opts.previous)).config?.groups : undefined;
  // Renderings hold private keys: in a folder of this run's, removed however the run ends.
  const run = binaries.length ? await commandRunDir() : undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (run) rmSync(run.dir, { recursive: true, force: true });
    process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGHUP' ? 1 : 15));
  };
  if (run) for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(s, onSignal);
  const result = await checkTree(dir, undefined, {
    against,
    envoy: run ? new EnvoyChecker({ binaries, workDir: run.dir }) : undefined,
  }).finally(() => run?.remove());
  const failed = hasErrors(result.diagnostics) || !result.config;
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ ok: !failed, diagnostics: result.diagnostics }, null, 2)}\n`);
  } else {
    for (const d of result.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
    const errors = result.diagnostics.filter((d) => d.severity === 'error').length;
    const warnings = result.diagnostics.length - errors;
    if (failed) process.stderr.write(`${dir}: invalid (${errors} error(s), ${warnings} warning(s))\n`);
    else {
      const groups = [...result.config!.groups.values()];
      const counts = groups
        .map((g) => `${g.group}: ${Object.values(g.types).reduce((a, t) => a + t.resources.size, 0)} resources`)
        .join(', ');
      process.stdout.write(`${dir}: valid${warnings ? ` (${warnings} warning(s))` : ''}; ${counts}\n`);
    }
  }
  return failed ? 1 : 0;
}
