import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as kit from '../../lib';
import { libCode } from '../helpers/lib-sources';

// One error vocabulary: every error class the package exports carries a stable `code`, only HTTP errors carry a
// `status` (and then it is the HTTP status), and docs/errors.md lists every code the kit throws or answers with its
// status. The codes answered are read from the sources, so a new `code: '…'` without its row in the docs fails here.

const root = path.join(__dirname, '..', '..');
const docs = readFileSync(path.join(root, 'docs', 'errors.md'), 'utf8');

/** The documented codes: first cell of every table row, with the whole row (its status cells included). */
const documented = new Map<string, string[]>();
for (const row of docs.split('\n').filter((line) => /^\| `[a-z0-9_]+` \|/.test(line))) {
  const code = /^\| `([a-z0-9_]+)` \|/.exec(row)![1]!;
  documented.set(code, [...(documented.get(code) ?? []), row]);
}

/** True when a row of the docs lists `code` with `status` in one of its cells. */
function documentedWithStatus(code: string, status: number): boolean {
  return (documented.get(code) ?? []).some((row) => row.split('|').some((cell) => new RegExp(`(^|[^0-9])${status}([^0-9]|$)`).test(cell)));
}

/** Each exported error class built as the kit builds it. The first test checks this list is complete. */
const instances: Record<string, () => Error> = {
  HttpError: () => new kit.HttpError(418, { code: 'teapot' }),
  BadRequestError: () => new kit.BadRequestError(),
  UnauthorizedError: () => new kit.UnauthorizedError(),
  ForbiddenError: () => new kit.ForbiddenError(),
  NotFoundError: () => new kit.NotFoundError(),
  MethodNotAllowedError: () => new kit.MethodNotAllowedError(['GET']),
  NotAcceptableError: () => new kit.NotAcceptableError(['application/json']),
  ConflictError: () => new kit.ConflictError(),
  GoneError: () => new kit.GoneError(),
  UnprocessableEntityError: () => new kit.UnprocessableEntityError([{ field: 'title', message: 'is required' }]),
  TooManyRequestsError: () => new kit.TooManyRequestsError(30),
  BadGatewayError: () => new kit.BadGatewayError(),
  ServiceUnavailableError: () => new kit.ServiceUnavailableError(),
  OptionsError: () => new kit.OptionsError('exampleFactory: unknown option "x"'),
  StoreUnavailableError: () => new kit.StoreUnavailableError(),
  StoreWrongTypeError: () => new kit.StoreWrongTypeError('a string'),
  TokenError: () => new kit.TokenError('expired'),
  KeySourceUnavailableError: () => new kit.KeySourceUnavailableError('timeout'),
  KeySourceUnavailable: () => new kit.KeySourceUnavailable('bad_response'),
  RefreshTokenError: () => new kit.RefreshTokenError('reused'),
  DpopError: () => new kit.DpopError('replayed'),
  IdTokenRejectedError: () => new kit.IdTokenRejectedError('nonce does not match'),
  LogoutTokenRejectedError: () => new kit.LogoutTokenRejectedError('no events'),
  OidcGrantError: () => new kit.OidcGrantError('invalid_grant', 400),
  WeChatApiError: () => new kit.WeChatApiError('code_used'),
  InsufficientAuthenticationError: () => new kit.InsufficientAuthenticationError({ acr: '2fa', maxAgeSeconds: 300 }),
  CredentialConflictError: () => new kit.CredentialConflictError(),
  PasskeyVerificationError: () => new kit.PasskeyVerificationError('counter'),
  SealedSecretError: () => new kit.SealedSecretError(),
  BreachCheckUnavailableError: () => new kit.BreachCheckUnavailableError('the breach range API answered 503'),
  MailDeliveryError: () => new kit.MailDeliveryError('the mail could not be sent (ECONNECTION)', { permanent: false }),
};

const exportedErrorClasses = Object.entries(kit)
  .filter(([, value]) => typeof value === 'function' && value.prototype instanceof Error)
  .map(([name]) => name);

/** A code the sources answer or throw, where it is written, and its HTTP status when the source states it. */
interface AnsweredCode {
  code: string;
  where: string;
  status?: number;
}

/**
 * Every code written in lib/: `code: 'x'` and `code = 'x'` (statuses read from `new XxxError({ … code: 'x'` and
 * `new HttpError(NNN, { code: 'x'`), and the first argument of helpers that take a code (`function f(code: string`),
 * such as `loginRejected('invalid_state', …)`. Comments (TSDoc examples) are skipped.
 */
function answeredCodes(): AnsweredCode[] {
  const text = libCode();
  const helpers = new Set<string>();
  for (const source of text.values()) {
    for (const match of source.matchAll(/(?:function (\w+)|const (\w+) = )\(code: string/g)) helpers.add((match[1] ?? match[2])!);
  }
  const found: AnsweredCode[] = [];
  for (const [file, source] of text) {
    const where = path.join('lib', file);
    for (const match of source.matchAll(/\bcode(?::| =) '([a-z][a-z0-9_]*)'/g)) {
      const before = source.slice(Math.max(0, match.index - 200), match.index);
      const construction = /new (\w+)\((\d{3}, )?\{[^{}]*$/.exec(before);
      let status: number | undefined;
      if (construction?.[2]) status = Number(construction[2].slice(0, 3));
      else if (construction) {
        const errorClass = (kit as Record<string, unknown>)[construction[1]!];
        if (typeof errorClass === 'function' && errorClass.prototype instanceof kit.HttpError) {
          status = (new (errorClass as new (...args: unknown[]) => kit.HttpError)([]) as kit.HttpError).status;
        }
      }
      found.push({ code: match[1]!, where, ...(status === undefined ? {} : { status }) });
    }
    for (const helper of helpers) {
      for (const match of source.matchAll(new RegExp(`\\b${helper}\\('([a-z][a-z0-9_]*)'`, 'g'))) found.push({ code: match[1]!, where });
    }
  }
  return found;
}

describe('the error vocabulary', () => {
  it('has an instance for every exported error class', () => {
    expect(Object.keys(instances).sort()).toEqual([...exportedErrorClasses].sort());
  });

  it.each(Object.entries(instances))('%s carries a stable code; only an HTTP error carries a status', (_name, build) => {
    const error = build() as Error & { code?: unknown; status?: unknown; statusCode?: unknown };
    expect(typeof error.code).toBe('string');
    expect(error.code).toMatch(/^[a-z][a-z0-9_]*$/);
    if (error instanceof kit.HttpError) {
      expect(error.status).toBeGreaterThanOrEqual(400);
      expect(error.status).toBeLessThan(600);
      expect(error.statusCode).toBe(error.status);
    } else {
      // A domain error's HTTP meaning is decided by whoever answers it; a `status` here would be mistaken for it.
      expect(error).not.toHaveProperty('status');
      expect(error).not.toHaveProperty('statusCode');
    }
  });

  it.each(Object.entries(instances).filter(([name]) => name !== 'HttpError'))('%s has its code in docs/errors.md', (_name, build) => {
    const error = build() as Error & { code: string };
    expect(documented.has(error.code) ? error.code : `${error.code} is not in docs/errors.md`).toBe(error.code);
    if (error instanceof kit.HttpError) expect(documentedWithStatus(error.code, error.status)).toBe(true);
  });

  it('finds the codes the sources answer (the scan itself works)', () => {
    const codes = answeredCodes();
    expect(codes.length).toBeGreaterThan(60);
    expect(codes).toContainEqual({ code: 'csrf_origin', where: path.join('lib', 'session', 'csrf-guard.ts'), status: 403 });
    expect(codes.map(({ code }) => code)).toEqual(expect.arrayContaining(['invalid_state', 'credentials_required', 'oidc_misconfigured']));
  });

  it('documents every code the sources answer or throw, with the status the source gives it', () => {
    const missing = answeredCodes()
      .filter(({ code, status }) => !documented.has(code) || (status !== undefined && !documentedWithStatus(code, status)))
      .map(({ code, where, status }) => `${code}${status === undefined ? '' : ` (${status})`} from ${where}`);
    expect([...new Set(missing)]).toEqual([]);
  });

  it('documents every WeChat-compatible error with its errcode and status', () => {
    for (const [name, { errcode, status }] of Object.entries(kit.WECHAT_ERRORS)) {
      const rows = documented.get(name) ?? [];
      expect(
        rows.some((row) => row.includes(`| ${errcode} |`) && row.includes(`| ${status} |`)) ? name : `${name} ${errcode} ${status}`,
      ).toBe(name);
    }
  });

  it('throws no bare Error or TypeError but the internal invariants listed here', () => {
    // Each of these means a bug or a broken callback contract inside a request: the error handler answers it 500
    // `internal_error` (logged, never shown). Anything a user can cause or fix gets a coded error instead.
    const invariants = [
      'qr/qr-token-issuer.ts: the refresh token belongs to no grant',
      'qr/qr-login-requests.ts: auth_code collision',
      'qr/qr-state.ts: confirming needs mintCode',
      'qr/qr-login.ts: mapUser must return',
      'qr/openid-secret.ts: the openid secret vanished',
      'portal/throttle/login-throttle.ts: the device-token key is missing',
      'basic/require-basic.ts: verify must resolve to null or a user',
      // Compare-and-set lost to other writers many times in a row: a bug or an attack, not an outage.
      'credentials/kv-credential-store.ts: the passkey record kept changing',
      'credentials/kv-credential-store.ts: the TOTP step kept changing',
      'credentials/kv-credential-store.ts: the recovery codes kept changing',
      // The store's own command names.
      'store/turn-pipeline.ts: no Redis command',
      // oidc-provider's own outbound calls (back-channel logout): it reports the failed call, no user request sees it.
      'provider/backchannel-fetch.ts: refused to call',
      // Not the kit's server code: the passkey page's browser script, which shows the message to the user.
      'portal/passkeys/passkey-pages.ts: data.detail || FALLBACK',
    ];
    const bare = [...libCode()].flatMap(([file, code]) =>
      [...code.matchAll(/new (Error|TypeError|RangeError)\(/g)].map(
        (match) => `${file}: ${code.slice(match.index, match.index + 200).replace(/\s+/g, ' ')}`,
      ),
    );
    const unlisted = bare.filter(
      (found) =>
        !invariants.some((invariant) => {
          const [file, words] = invariant.split(': ') as [string, string];
          return found.startsWith(`${file}:`) && found.includes(words);
        }),
    );
    expect(unlisted).toEqual([]);
    expect(bare).toHaveLength(invariants.length);
  });
});
