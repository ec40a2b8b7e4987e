/**
 * The one options rule every public factory follows: options are checked when the factory is called, an unknown
 * key is an error that suggests the closest known one, a wrong type names the option and what it expects, and two
 * options that contradict each other are named together. All failures are `OptionsError`s (a `TypeError` with the
 * stable code `invalid_options`).
 */

/** Thrown by every factory for options it cannot use; `code` is always `invalid_options`. */
export class OptionsError extends TypeError {
  readonly code = 'invalid_options';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OptionsError';
  }
}

/** The kinds of value an option may take. */
export type OptionType =
  'string' | 'number' | 'integer' | 'boolean' | 'function' | 'object' | 'array' | 'string[]' | 'buffer' | 'regexp' | 'any';

/** How one option is checked. */
export interface OptionSpec {
  /** Accepted kinds; several mean "any of these". */
  type: OptionType | readonly OptionType[];
  required?: boolean;
  /** What a person should pass, used in the message instead of the bare type, e.g. "a number of seconds from 1 to 3600". */
  expected?: string;
  /** Further check of a present value of the right type; returns the reason it is wrong, or undefined. */
  check?: (value: never) => string | undefined;
  /**
   * For an object-valued option: the schema of its members, checked by the same rules (unknown keys with a
   * suggestion, required, types), with names reported as `parent.member`.
   */
  members?: OptionSchema;
  /** Relations between the members of an object-valued option (see {@link OptionRelations}). */
  memberRelations?: OptionRelations;
  /**
   * Other names people write for this option (its former name, or the name a well-known library uses, such as
   * `cors`'s `maxAge`): an unknown key among them is answered with this option's name.
   */
  aliases?: readonly string[];
}

/** Every option a factory knows, by name. */
export type OptionSchema = Readonly<Record<string, OptionSpec>>;

/** Relations between options. */
export interface OptionRelations {
  /** Pairs (or larger groups) of options of which at most one may be given. */
  exclusive?: readonly (readonly string[])[];
  /** Groups of which exactly one must be given. */
  exactlyOne?: readonly (readonly string[])[];
}

const TYPE_NAMES: Record<OptionType, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  function: 'a function',
  object: 'an object',
  array: 'an array',
  'string[]': 'an array of strings',
  buffer: 'a Buffer',
  regexp: 'a regular expression',
  any: 'a value',
};

function isType(value: unknown, type: OptionType): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'function':
      return typeof value === 'function';
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'array':
      return Array.isArray(value);
    case 'string[]':
      return Array.isArray(value) && value.every((item) => typeof item === 'string');
    case 'buffer':
      return Buffer.isBuffer(value);
    case 'regexp':
      return value instanceof RegExp;
    case 'any':
      return true;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return typeof value;
}

/** Optimal string alignment distance: edits, and swaps of two neighbouring letters (`audeince`), count one each. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i += 1) {
    for (let j = 1; j < cols; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i] as number[];
      const above = d[i - 1] as number[];
      row[j] = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
      }
    }
  }
  return (d[rows - 1] as number[])[cols - 1] as number;
}

const UNIT = /(ms|millis|milliseconds|seconds|secs)$/;
const LIFETIME_WORD = /(ttl|validity|retention|lifetime|timeout)$/;

/**
 * The same option in another unit (`timeoutMs`/`timeoutSeconds`) when `loose` is false; with `loose`, also under
 * another lifetime word (`qrValiditySeconds`/`qrLifetimeSeconds`, `ttlSeconds`/`lifetimeSeconds`).
 */
function sameStem(known: string, unknown: string, loose: boolean): boolean {
  if (!UNIT.test(known) || !UNIT.test(unknown)) return false;
  const [a, b] = [known.replace(UNIT, ''), unknown.replace(UNIT, '')];
  return loose ? a.replace(LIFETIME_WORD, '') === b.replace(LIFETIME_WORD, '') : a === b;
}

/**
 * The known option a misspelled key most likely meant: same letters ignoring case and separators, the same option
 * in another unit or lifetime word (`timeoutMs` → `timeoutSeconds`, `accessTokenTtlSeconds` →
 * `accessTokenLifetimeSeconds`), or within a small edit distance. Undefined when nothing is close.
 *
 * @example
 * closestOption('audiance', ['issuer', 'audience']); // 'audience'
 */
export function closestOption(unknown: string, known: readonly string[]): string | undefined {
  const squash = (name: string): string => name.toLowerCase().replace(/[-_]/g, '');
  const exact = known.find((name) => squash(name) === squash(unknown));
  if (exact !== undefined) return exact;
  const renamed =
    known.find((name) => sameStem(squash(name), squash(unknown), false)) ??
    known.find((name) => sameStem(squash(name), squash(unknown), true));
  if (renamed !== undefined) return renamed;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of known) {
    const distance = editDistance(squash(unknown), squash(name));
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  const allowed = Math.max(2, Math.floor(unknown.length / 4));
  return bestDistance <= allowed ? best : undefined;
}

function looksLikeRequest(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'method' in value && 'headers' in value && ('socket' in value || 'url' in value);
}

/**
 * Throws when a factory's first argument is an Express request, i.e. the factory itself was mounted as a middleware
 * (`app.use(requirePermission)` instead of `app.use(requirePermission(...))`). {@link checkOptions} does this for the
 * options argument; factories whose first argument is something else call it directly.
 *
 * @example
 * refuseMiddlewareUse('requirePermission', action, "app.use(requirePermission('read', 'reports', { policy }))");
 */
export function refuseMiddlewareUse(factory: string, firstArgument: unknown, usage = `app.use(${factory}({ ... }))`): void {
  if (looksLikeRequest(firstArgument)) {
    throw new OptionsError(`${factory}: it is a factory: write ${usage}, not app.use(${factory})`);
  }
}

/** The first problem of `given` under `schema`, as a message without the factory's name, or undefined. */
function findProblem(given: Record<string, unknown>, schema: OptionSchema, relations: OptionRelations, prefix: string): string | undefined {
  const known = Object.keys(schema);
  const unknownKeys = Object.keys(given).filter((key) => !Object.prototype.hasOwnProperty.call(schema, key));
  if (unknownKeys.length > 0) {
    const parts = unknownKeys.map((key) => {
      const suggestion = known.find((name) => schema[name]?.aliases?.includes(key)) ?? closestOption(key, known);
      return suggestion === undefined ? `"${prefix}${key}"` : `"${prefix}${key}" (did you mean "${prefix}${suggestion}"?)`;
    });
    return `unknown option${unknownKeys.length > 1 ? 's' : ''} ${parts.join(', ')}; known options are ${known.map((name) => prefix + name).join(', ')}`;
  }
  for (const [name, spec] of Object.entries(schema)) {
    const value = given[name];
    const fullName = prefix + name;
    if (value === undefined) {
      if (spec.required) return `${fullName} is required${spec.expected ? ` (${spec.expected})` : ''}`;
      continue;
    }
    const types = typeof spec.type === 'string' ? [spec.type] : spec.type;
    if (!types.some((type) => isType(value, type))) {
      const expected = spec.expected ?? types.map((type) => TYPE_NAMES[type]).join(' or ');
      return `${fullName} must be ${expected}, got ${describe(value)}`;
    }
    if (spec.members !== undefined && isType(value, 'object')) {
      const nested = findProblem(value as Record<string, unknown>, spec.members, spec.memberRelations ?? {}, `${fullName}.`);
      if (nested !== undefined) return nested;
    }
    const problem = spec.check?.(value as never);
    if (problem !== undefined) return `${fullName} ${problem}`;
  }
  const present = (group: readonly string[]) => group.filter((name) => given[name] !== undefined).map((name) => prefix + name);
  for (const group of relations.exclusive ?? []) {
    const found = present(group);
    if (found.length > 1) return `${found.join(' and ')} cannot be used together; give only one of them`;
  }
  for (const group of relations.exactlyOne ?? []) {
    const found = present(group);
    if (found.length > 1) return `${found.join(' and ')} cannot be used together; give only one of them`;
    if (found.length === 0) return `give one of ${group.map((name) => prefix + name).join(', ')}`;
  }
  return undefined;
}

/**
 * Checks a factory's options against its schema and throws an {@link OptionsError} naming the first problem, in
 * this order: the factory used as a middleware (`app.use(factory)`), unknown keys (all of them, each with a
 * suggestion), missing required options, wrong types and failed checks (members of object-valued options
 * included, named `parent.member`), then contradicting options. The options object is only read, never changed.
 *
 * @example
 * checkOptions('corsPreflight', options, {
 *   origins: { type: ['string', 'string[]'], required: true },
 *   credentials: { type: 'boolean' },
 * });
 */
export function checkOptions<T>(
  factory: string,
  options: T,
  schema: OptionSchema,
  relations: OptionRelations = {},
): asserts options is T & Record<string, unknown> {
  refuseMiddlewareUse(factory, options);
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new OptionsError(`${factory}: options must be an object, got ${describe(options)}`);
  }
  const problem = findProblem(options as Record<string, unknown>, schema, relations, '');
  if (problem !== undefined) throw new OptionsError(`${factory}: ${problem}`);
}

/**
 * A check for {@link OptionSpec.check}: a number within [min, max].
 *
 * @example
 * { type: 'number', check: within(1, 3600) }
 */
export function within(min: number, max: number): (value: number) => string | undefined {
  return (value) => (value < min || value > max ? `must be from ${min} to ${max}, got ${value}` : undefined);
}

/**
 * Refuses insecure local-development settings in production: one rule for every factory that offers
 * `allowInsecureLocalDevelopment`.
 *
 * @example
 * if (options.allowInsecureLocalDevelopment) refuseInProduction('ssoSession');
 */
export function refuseInProduction(factory: string): void {
  if (process.env.NODE_ENV === 'production') {
    throw new OptionsError(`${factory}: allowInsecureLocalDevelopment is refused when NODE_ENV=production`);
  }
}

const warned = new Set<string>();

/**
 * Writes a start-up warning (`console.warn`, prefixed `[express-sso-kit]`) once per process for each `key`, so a
 * factory called for every app or router of a process does not repeat it. Warnings name the risk and the fix.
 *
 * @example
 * warnOnce('ssoSession:insecure', 'ssoSession: allowInsecureLocalDevelopment sends the session cookie over plain http');
 */
export function warnOnce(key: string, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  console.warn(`[express-sso-kit] ${message}`);
}

/**
 * The spec of a factory's `store` option: the kit's own {@link KeyValueStore}-shaped store (RedisStore or
 * MemoryStore), required.
 *
 * @example
 * const SCHEMA: OptionSchema = { store: KIT_STORE_OPTION };
 */
export const KIT_STORE_OPTION: OptionSpec = {
  type: 'object',
  required: true,
  expected: 'the kit store (RedisStore or MemoryStore)',
  // One method of the port is enough to tell the kit store from a Redis client or an options object passed by mistake.
  check: (store: { increment?: unknown }) =>
    typeof store.increment === 'function' ? undefined : 'must be the kit store (RedisStore or MemoryStore)',
};
