import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { targetLabel, verdictWord, type CaseResult, type TargetResult } from './harness';

/** What bench/report.ts needs of one Node version's run (bench/run.ts's `NodeRun`). */
export interface VersionRun {
  node: string;
  machine: string;
  seconds: number;
  loadAtStart: string;
  loadAtEnd: string;
  results: CaseResult[];
  targets: TargetResult[];
  markdown: string;
}

/** The run's settings as RESULTS.md states them. */
export interface ReportSettings {
  connections: number;
  pipelining: number;
  rounds: number;
  warmupSeconds: number;
  durationSeconds: number;
  placement: string;
  /** What the server processes ran (serverCodeSummary). */
  serverCode: string;
}

/** The rows of issue 30's table: [suite, case, label, the anchor it is compared with]. */
const HEADLINE: Array<[string, string, string, string | undefined]> = [
  ['sessions', 'bare', 'bare Express route (sessions suite)', undefined],
  ['sessions', 'bare-prepared', 'bare + `prepareForProperties`', undefined],
  ['sessions', 'bare-same-answer', "bare shaped like the kit's app, no session check (the floor)", undefined],
  [
    'sessions',
    'bare-redis-read',
    'the same plus one batched Redis read and JSON.parse per request (the floor of an uncached check)',
    undefined,
  ],
  ['sessions', 'express-session-rolling', 'express-session + connect-redis', undefined],
  ['sessions', 'kit-require-session', 'kit `ssoSession` + `requireSession`', 'express-session-rolling'],
  ['sessions', 'kit-require-session-cached', 'same with `cache: {}`', 'express-session-rolling'],
  ['bearer', 'bare', 'bare Express route (bearer suite)', undefined],
  ['bearer', 'bare-prepared', 'bare + `prepareForProperties`', undefined],
  ['bearer', 'bare-middleware', 'bare + one pass-through middleware (the floor of any guard)', undefined],
  [
    'bearer',
    'bare-token-hash',
    "the same whose middleware takes the token's SHA-256 and one Map lookup (the floor of a cache that holds no token)",
    undefined,
  ],
  ['bearer', 'oauth2-jwt-bearer-rs256', 'express-oauth2-jwt-bearer RS256', undefined],
  ['bearer', 'kit-rs256-jwks', 'kit `requireBearer` RS256 via JWKS (cached)', 'oauth2-jwt-bearer-rs256'],
  ['bearer', 'kit-hs256', 'kit `requireBearer` HS256 (cached)', 'oauth2-jwt-bearer-rs256'],
];

const ANCHOR_NAMES: Record<string, string> = {
  'express-session-rolling': 'express-session',
  'oauth2-jwt-bearer-rs256': 'express-oauth2-jwt-bearer',
};

function find(run: VersionRun, suite: string, name: string): CaseResult | undefined {
  return run.results.find((result) => result.suite === suite && result.name === name);
}

function ratio(a: CaseResult | undefined, b: CaseResult | undefined): string {
  return a && b && b.requestsPerSecond > 0 ? `${(a.requestsPerSecond / b.requestsPerSecond).toFixed(2)}×` : 'n/a';
}

function shortVersion(node: string): string {
  return `Node ${node.replace(/^v/, '').split('.')[0]}`;
}

/**
 * Issue 30's table for every Node version measured: req/s with the ratio to the suite's bare route and to the
 * anchor, and the server's CPU per request (steadier than req/s on a loaded machine), then the targets side by side.
 *
 * @example
 * console.log(acrossVersions(runs));
 */
export function acrossVersions(runs: VersionRun[]): string {
  const header = `| case | ${runs.map((run) => `${shortVersion(run.node)} req/s | ÷ bare | ÷ anchor | CPU µs/req`).join(' | ')} |`;
  const align = `|---|${runs.map(() => '---:|---:|---:|---:').join('|')}|`;
  const lines = [header, align];
  for (const [suite, name, label, anchor] of HEADLINE) {
    const cells = runs.map((run) => {
      const row = find(run, suite, name);
      if (!row) return 'n/a | | | ';
      const bare = find(run, suite, 'bare');
      const anchorCell = anchor ? `${ratio(row, find(run, suite, anchor))} ${ANCHOR_NAMES[anchor]}` : '';
      return `${Math.round(row.requestsPerSecond).toLocaleString('en-US')} | ${name === 'bare' ? '' : ratio(row, bare)} | ${anchorCell} | ${Math.round(row.serverCpuMicrosPerRequest)}`;
    });
    lines.push(`| ${label} | ${cells.join(' | ')} |`);
  }
  const loads = runs.map((run) => `${shortVersion(run.node)} ${run.loadAtStart} → ${run.loadAtEnd}`).join(', ');
  return [...lines, '', `1-minute load average at the start and end of each version's run: ${loads}.`].join('\n');
}

/** Every target of every run, one row per target, one column per Node version. */
export function targetsAcrossVersions(runs: VersionRun[]): string {
  const keys: string[] = [];
  const byKey = new Map<string, Map<string, TargetResult>>();
  for (const run of runs) {
    for (const target of run.targets) {
      const key = `${target.suite}: ${targetLabel(target)}`;
      if (!byKey.has(key)) {
        keys.push(key);
        byKey.set(key, new Map());
      }
      byKey.get(key)!.set(run.node, target);
    }
  }
  const lines = [`| target | ${runs.map((run) => shortVersion(run.node)).join(' | ')} |`, `|---|${runs.map(() => '---').join('|')}|`];
  for (const key of keys) {
    const cells = runs.map((run) => {
      const target = byKey.get(key)!.get(run.node);
      if (!target) return 'n/a';
      const measured = target.ratio === undefined ? 'n/a' : `${target.ratio.toFixed(3)}×`;
      return `${measured} ${verdictWord(target)}${target.note ? ` (${target.note})` : ''}`;
    });
    lines.push(`| ${key} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/**
 * bench/RESULTS.md from one run per Node version: settings, issue 30's table across versions, the targets across
 * versions, the profile notes (bench/profile-notes.md) and each version's full tables.
 *
 * @example
 * await writeFile('bench/RESULTS.md', await composeReport(runs, settings));
 */
export async function composeReport(runs: VersionRun[], settings: ReportSettings): Promise<string> {
  const notes = await readFile(join(__dirname, 'profile-notes.md'), 'utf8').catch(() => '');
  const qrProfile = runs.some((run) => run.markdown.includes('#### QR login'))
    ? await readFile(join(__dirname, 'qr-profile.md'), 'utf8').catch(() => '')
    : '';
  return [
    '# Benchmark results',
    '',
    `Generated by \`npm run bench -- --write${runs.length > 1 ? ` --node ${runs.map((run) => shortVersion(run.node).slice(5)).join(',')}` : ''}\` on ${new Date().toISOString().slice(0, 10)}: one run per Node version, one after the other (${runs.map((run) => `${run.node} ${run.seconds} s`).join(', ')}).`,
    '',
    `- Machine: ${runs[0]?.machine.replace(/, Node v[\d.]+/, '') ?? 'unknown'}`,
    `- Load: autocannon, ${settings.connections} connections, pipelining ${settings.pipelining}; each case ${settings.rounds}× (round-robin over the suite) ${settings.warmupSeconds} s warm-up (discarded) then ${settings.durationSeconds} s measured, best round kept; a fresh server process per case and round, on 127.0.0.1:0. Each target is decided apart from the tables, by an interleaved comparison of its two cases (both servers up, the load switched between them in 1 s slices, eight A B B A / B A A B pairs, the median ratio; see bench/paired.ts): an A/A check of this method read 0.97–0.99×, so about 3 % is its resolution here.`,
    `- Processes: ${settings.placement}; the servers and the load generator ran ${settings.serverCode}. "server CPU µs/req" is the server process's user + system CPU time over the measured run divided by the requests answered; "busy" is CPU time ÷ wall time (100 % = one CPU fully used).`,
    '- bare-prepared: bare Express plus the one step the kit\'s session, Bearer and QR middlewares take first (`prepareForProperties`, see docs/sessions.md, "Performance"); a kit case ÷ bare-prepared is what the kit\'s own work costs.',
    '- The machine is shared: the 1-minute load average is given for each version and each suite. With a load above the core count the server process waits for its CPU ("server busy" well below 100 %), req/s falls for every case alike and the ratios of one run stay comparable; the CPU per request is the steadier figure.',
    '',
    '## Across Node versions',
    '',
    acrossVersions(runs),
    '',
    '## Targets',
    '',
    targetsAcrossVersions(runs),
    '',
    ...(notes ? [notes.trim(), ''] : []),
    ...runs.flatMap((run) => [`## ${shortVersion(run.node)} (${run.node})`, '', run.markdown, '']),
    ...(qrProfile ? [qrProfile.trim(), ''] : []),
    'Figures from a shared 2-core machine move by up to ±20 % between runs; compare ratios from one run, not absolute figures across runs, and repeat a run before trusting a ratio close to its target.',
    '',
  ].join('\n');
}
