import { existsSync, readFileSync } from 'node:fs';
import { projectPath } from '../shared/paths.ts';

/** Whether this is a release (the archive or the package) rather than a checkout. */
export function isRelease(): boolean {
  return existsSync(projectPath('dist', 'release.json'));
}

/**
 * The settings file commands read when --config is not given: an installed release's in /etc, a
 * checkout's own example.
 */
export function defaultSettingsFile(): string {
  return isRelease() ? '/etc/fleetxds/fleetxds.yaml' : 'config/fleetxds.yaml';
}

/** "fleetxds 0.1.0 (commit abc, Node.js v24.x)": a release's manifest, or the checkout's package.json. */
export function versionLine(): string {
  if (isRelease()) {
    const m = JSON.parse(readFileSync(projectPath('dist', 'release.json'), 'utf8')) as {
      version: string;
      commit: string;
      node: string;
    };
    return `fleetxds ${m.version} (commit ${m.commit}, Node.js ${m.node})`;
  }
  const pkg = JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version: string };
  return `fleetxds ${pkg.version} (a checkout, not a release; Node.js ${process.version})`;
}
