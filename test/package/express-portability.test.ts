import { readFileSync } from 'node:fs';
import path from 'node:path';
import { codeOf, LIB, libCode, libSourceFiles } from '../helpers/lib-sources';

// Express 5 passes a rejected promise of a handler to `next`; Express 4 ignores it: the request hangs and the
// rejection is unhandled (which ends a Node process by default). So every async handler the kit mounts goes through
// `guarded` (lib/http/handlers.ts). This test reads the sources: an async function given to a router or app method
// without `guarded(` fails it, whether written inline, named elsewhere in the file, or made by a factory of the file
// that returns one (`passwordLogin(...)`).

/** The text of the call's arguments starting at `open` (the index of its opening parenthesis). */
function argumentsAt(source: string, open: number): string {
  let depth = 0;
  for (let i = open; i < source.length; i += 1) {
    if (source[i] === '(') depth += 1;
    else if (source[i] === ')') {
      depth -= 1;
      if (depth === 0) return source.slice(open + 1, i);
    }
  }
  return source.slice(open + 1);
}

const ROUTE_CALL = /(?:\b(?:app|router|\w+Router)\s*|^\s*)\.(?:get|post|put|patch|delete|all|use|head|options)\(/gm;

/** The top-level arguments of an argument list (commas inside brackets, braces and parentheses do not split). */
function topLevel(args: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < args.length; i += 1) {
    const c = args[i];
    if (c === '(' || c === '[' || c === '{') depth += 1;
    else if (c === ')' || c === ']' || c === '}') depth -= 1;
    else if (c === ',' && depth === 0) {
      parts.push(args.slice(from, i).trim());
      from = i + 1;
    }
  }
  parts.push(args.slice(from).trim());
  return parts.filter((part) => part !== '');
}

/** Factories that return an async handler, e.g. `function passwordLogin(...) { return async function ...`. */
function handlerFactories(raw: string): string[] {
  return [...codeOf(raw).matchAll(/function (\w+)\([^)]*\)[^{]*\{\s*return async function/g)].map((match) => match[1]!);
}

/** Async handlers given to a route method without `guarded(`, as `file: excerpt`; `factories` are from every file. */
function unguardedAsyncHandlers(file: string, raw: string, factories: ReadonlySet<string>): string[] {
  const source = codeOf(raw);
  const asyncNames = new Set<string>();
  for (const match of source.matchAll(/^\s*(?:export )?async function (\w+)|^\s*const (\w+) = async\b/gm))
    asyncNames.add((match[1] ?? match[2])!);
  const found: string[] = [];
  for (const call of source.matchAll(ROUTE_CALL)) {
    for (const arg of topLevel(argumentsAt(source, call.index + call[0].length - 1))) {
      const callee = /^(\w+)\(/.exec(arg)?.[1];
      if (arg.startsWith('async ') || asyncNames.has(arg) || (callee !== undefined && factories.has(callee))) {
        found.push(`${path.relative(LIB, file)}: ${arg.slice(0, 60).replace(/\s+/g, ' ')}`);
      }
    }
  }
  return found;
}

describe('async handlers on Express 4', () => {
  it('finds an unguarded handler in every shape it can take (the scan itself works)', () => {
    const sample = [
      'async function listThings(req, res) {}',
      'function makeLogin(settings) {',
      '  return async function submitLogin(req, res) {};',
      '}',
      "router.get('/a', async function inline(req, res) {});",
      "router.get('/b', async (req, res) => {});",
      "router.route('/c')",
      '  .get(requireLogin, listThings)',
      "router.post('/d', parseForm, makeLogin(settings));",
      "router.get('/ok', guarded(async function fine(req, res) {}), guarded(listThings), guarded(makeLogin(settings)));",
      'await Promise.all(items.map(async (item) => item));',
    ].join('\n');
    expect(unguardedAsyncHandlers(path.join(LIB, 'sample.ts'), sample, new Set(handlerFactories(sample)))).toEqual([
      'sample.ts: async function inline(req, res) {}',
      'sample.ts: async (req, res) => {}',
      'sample.ts: listThings',
      'sample.ts: makeLogin(settings)',
    ]);
  });

  it('every async handler the kit mounts goes through guarded()', () => {
    const sources = new Map(libSourceFiles().map((file) => [file, readFileSync(file, 'utf8')]));
    const factories = new Set([...sources.values()].flatMap(handlerFactories));
    expect(factories).toContain('passwordLogin');
    const found = [...sources].flatMap(([file, raw]) => unguardedAsyncHandlers(file, raw, factories));
    expect(found).toEqual([]);
  });
});

describe('request properties that differ between Express 4 and 5', () => {
  // Express 4's req.host is the hostname without the port (every POST on a non-default port failed the CSRF check
  // for it); req.hostname and req.param() differ or are gone in 5; res.redirect('back') is gone in 5. The kit reads
  // the Host header under the `trust proxy` rules itself (lib/util/request-origin.ts).
  const VERSION_SPECIFIC =
    /\breq\.(host|hostname)\b|\breq\.param\(|\bres\.redirect\(\s*['"]back['"]|\breq\.acceptsCharset\(|\breq\.acceptsEncoding\(|\breq\.acceptsLanguage\(/;

  it('finds each of them (the scan itself works)', () => {
    for (const line of ['const h = req.host;', 'if (req.hostname) {}', "req.param('id')", "res.redirect('back')"]) {
      expect(VERSION_SPECIFIC.test(line)).toBe(true);
    }
    expect(VERSION_SPECIFIC.test('req.headers.host; req.hosts; requestOrigin(req)')).toBe(false);
  });

  it('the kit reads none of them', () => {
    const found = [...libCode()].flatMap(([file, code]) =>
      code
        .split('\n')
        .filter((line) => VERSION_SPECIFIC.test(line))
        .map((line) => `${file}: ${line.trim()}`),
    );
    expect(found).toEqual([]);
  });
});
