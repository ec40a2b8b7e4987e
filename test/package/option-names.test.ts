import { readFileSync } from 'node:fs';
import path from 'node:path';

// Consistent names across every option a user writes, read from the API report (etc/express-sso-kit.api.md, which
// `npm run api:check` keeps equal to the published declarations): durations are in seconds and say so
// (`…Seconds`), a lifetime is called a lifetime (not ttl, validity, retention or expiry), and insecure local
// development is allowed one way only (`allowInsecureLocalDevelopment`).

// api-extractor writes the report with CRLF line ends.
const report = readFileSync(path.join(__dirname, '..', '..', 'etc', 'express-sso-kit.api.md'), 'utf8').replace(/\r\n/g, '\n');

/** The interfaces users fill in (options and inputs), by name, with the names of their members (nested too). */
function inputShapes(text: string): Map<string, string[]> {
  const shapes = new Map<string, string[]>();
  const input = /(Options|Expectations|Input|Limits?|Wait|Definition|Registration|Client|Parameters|Endpoints|Routes)$/;
  for (const match of text.matchAll(/^export interface (\w+)[^{]*\{\n([\s\S]*?)\n\}/gm)) {
    const [, name, body] = match as unknown as [string, string, string];
    if (!input.test(name)) continue;
    shapes.set(
      name,
      [...body.matchAll(/^\s+(?:readonly )?([A-Za-z_$][\w$]*)\??:/gm)].map((member) => member[1]!),
    );
  }
  return shapes;
}

/** The lower-case words of a camelCase name: `idleTimeoutSeconds` → idle, timeout, seconds. */
const words = (name: string): string[] => name.split(/(?=[A-Z])/).map((word) => word.toLowerCase());
const DURATION_WORDS = new Set(['ms', 'millis', 'milliseconds', 'secs', 'seconds', 'ttl', 'validity', 'retention', 'timeout', 'age']);
for (const word of ['interval', 'lifetime', 'duration', 'cooldown', 'margin', 'tolerance', 'expiry']) DURATION_WORDS.add(word);
const OTHER_LIFETIME_WORDS = new Set(['ttl', 'validity', 'retention', 'expiry', 'duration']);

const isDuration = (name: string): boolean => DURATION_WORDS.has(words(name).at(-1)!) || /expiresIn$/.test(name);
const isInsecureSwitch = (name: string): boolean => /insecure|allowHttp|plainHttp|secureCookie/i.test(name);

/**
 * The public properties of the exported classes (those API Extractor marks `// @internal` left out). Methods are
 * operations, not settings: `ttlMillis(key)` of the store port answers what Redis's PTTL answers.
 */
function classMembers(text: string): Map<string, string[]> {
  const classes = new Map<string, string[]>();
  for (const match of text.matchAll(/^export class (\w+)[^{]*\{\n([\s\S]*?)\n\}/gm)) {
    const [, name, body] = match as unknown as [string, string, string];
    const lines = body.split('\n');
    const members = lines.flatMap((line, index) => {
      const member = /^\s+(?:readonly |static |protected )*([A-Za-z_$][\w$]*)\??:/.exec(line)?.[1];
      return member === undefined || member === 'constructor' || lines[index - 1]?.trim() === '// @internal' ? [] : [member];
    });
    classes.set(name, members);
  }
  return classes;
}

function violations(shapes: Map<string, string[]>): string[] {
  const found: string[] = [];
  for (const [shape, members] of shapes) {
    for (const member of members) {
      if (isDuration(member) && !member.endsWith('Seconds')) found.push(`${shape}.${member}: a duration named without Seconds`);
      if (words(member).some((word) => OTHER_LIFETIME_WORDS.has(word))) found.push(`${shape}.${member}: call a lifetime a Lifetime`);
      if (isInsecureSwitch(member) && member !== 'allowInsecureLocalDevelopment') {
        found.push(`${shape}.${member}: insecure local development is allowed by allowInsecureLocalDevelopment only`);
      }
    }
  }
  return found;
}

describe('option names', () => {
  it('reads the options of the API report (the scan itself works)', () => {
    const shapes = inputShapes(report);
    expect(shapes.get('SsoSessionOptions')).toEqual(expect.arrayContaining(['idleTimeoutSeconds', 'absoluteLifetimeSeconds']));
    expect(shapes.get('ReplicaWait')).toEqual(expect.arrayContaining(['timeoutSeconds']));
    expect(shapes.size).toBeGreaterThan(40);
    const sample = 'export interface ExampleOptions {\n    maxAge?: number;\n    codeTtlSeconds: number;\n    allowHttp?: boolean;\n}';
    expect(violations(inputShapes(sample))).toEqual([
      'ExampleOptions.maxAge: a duration named without Seconds',
      'ExampleOptions.codeTtlSeconds: call a lifetime a Lifetime',
      'ExampleOptions.allowHttp: insecure local development is allowed by allowInsecureLocalDevelopment only',
    ]);
  });

  it('names every duration …Seconds, every lifetime …Lifetime…, and one insecure-development switch', () => {
    expect(violations(inputShapes(report))).toEqual([]);
  });

  it('holds the public members of the exported classes to the same names', () => {
    const classes = classMembers(report);
    expect(classes.get('OidcProvider')).toEqual(expect.arrayContaining(['timeoutSeconds', 'clockToleranceSeconds']));
    expect(classes.get('OidcProvider')).not.toContain('timeoutMs');
    expect(violations(classes)).toEqual([]);
  });
});
