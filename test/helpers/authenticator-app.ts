import { Secret, TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import type request from 'supertest';
import { setCookieValue } from './cookies';

const STEP_MILLIS = 30_000;

/**
 * The code an authenticator app shows for `secret`, `offsetSteps` time steps from now (computed by otpauth, as the
 * user's phone would).
 *
 * @example
 * const code = totpCodeAt(secret, 1);
 */
export function totpCodeAt(secret: string, offsetSteps = 0): string {
  return new TOTP({ secret: Secret.fromBase32(secret) }).generate({ timestamp: Date.now() + offsetSteps * STEP_MILLIS });
}

/**
 * A user's authenticator app in a test: it remembers the last time step whose code it gave out, and the next code is
 * always of a later step, because the portal accepts each step once (a replay is refused). The portal also accepts
 * the next step's code, so two codes in one step need no wait; only a third waits for time to move on. An app that
 * replaces another of the same user (`replacing`) continues after the steps the old one gave out: the portal's
 * replay rule is the user's, not the app's.
 */
export class AuthenticatorApp {
  private lastStep: number;

  constructor(
    readonly secret: string,
    replacing?: AuthenticatorApp,
  ) {
    this.lastStep = replacing?.lastStep ?? -Infinity;
  }

  /**
   * A code the portal has not seen yet.
   *
   * @example
   * await page.getByLabel('Code from your authenticator app').fill(await app.nextCode());
   */
  async nextCode(): Promise<string> {
    for (;;) {
      const now = Math.floor(Date.now() / STEP_MILLIS);
      // The portal accepts one step either side of now: prefer now, else the next one.
      const step = Math.max(now, this.lastStep + 1);
      if (step <= now + 1) {
        this.lastStep = step;
        return totpCodeAt(this.secret, step - now);
      }
      await new Promise((resolve) => setTimeout(resolve, (now + 1) * STEP_MILLIS - Date.now() + 50));
    }
  }
}

/** What enrolling an authenticator app at the portal gave the user. */
export interface Enrolment {
  app: AuthenticatorApp;
  /** The code that turned the app on (spent: the portal refuses it from now on). */
  code: string;
  recoveryCodes: string[];
}

/**
 * On the portal's enrolment page (`/two-factor/totp`): reads the secret the page shows, turns the app on with its
 * code and reads the ten recovery codes. Leaves the browser on the recovery-codes page.
 *
 * @example
 * const { app, recoveryCodes } = await enrolInBrowser(page);
 */
export async function enrolInBrowser(page: Page): Promise<Enrolment> {
  const secret = (await page.locator('[data-totp-secret]').textContent())!.replace(/\s/g, '');
  const app = new AuthenticatorApp(secret);
  const code = await app.nextCode();
  await page.getByLabel('Code from your authenticator app').fill(code);
  await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Turn on' }).click()]);
  const recoveryCodes = await page.locator('[data-recovery-codes] code').allTextContents();
  return { app, code, recoveryCodes };
}

/**
 * On the portal's step-up page: sends `code` with the form of `method` (the authenticator app or a recovery code).
 *
 * @example
 * await stepUpInBrowser(page, 'totp', await app.nextCode());
 */
export async function stepUpInBrowser(page: Page, method: 'totp' | 'recovery', code: string): Promise<void> {
  const form = page.locator(`form[data-method="${method}"]`);
  await form.locator('input[name="code"]').fill(code);
  await Promise.all([page.waitForLoadState('load'), form.getByRole('button', { name: 'Continue' }).click()]);
}

/**
 * Gets a browser that was sent to the portal for a second factor through it and back to `returnTo`, as the user
 * would: on the enrolment page it enrols a new app (and continues past the recovery codes), on the step-up page it
 * types the next code of `app`. Resolves to the app, for later step-ups.
 *
 * @example
 * await page.goto(adminUrl);
 * app = await passSecondFactor(page, adminUrl, app);
 */
export async function passSecondFactor(page: Page, returnTo: string, app?: AuthenticatorApp): Promise<AuthenticatorApp> {
  await page.waitForURL((url) => url.pathname === '/two-factor/totp' || url.pathname === '/step-up');
  if (new URL(page.url()).pathname === '/two-factor/totp') {
    const enrolment = await enrolInBrowser(page);
    await Promise.all([page.waitForURL(returnTo), page.getByRole('link', { name: 'Continue' }).click()]);
    return enrolment.app;
  }
  if (!app) throw new Error('the portal asks for a code, but the test has no authenticator app for this user');
  await Promise.all([page.waitForURL(returnTo), stepUpInBrowser(page, 'totp', await app.nextCode())]);
  return app;
}

/**
 * Where the portal sends a browser back once the second factor is done, read from the address of its step-up page
 * or of its enrolment page (whose own `return_to` is the step-up page). Undefined on any other page.
 *
 * @example
 * expect(secondFactorReturnTo(page.url())).toBe(adminUrl);
 */
export function secondFactorReturnTo(address: string): string | undefined {
  const url = new URL(address);
  const stepUp = url.pathname === '/two-factor/totp' ? new URL(url.searchParams.get('return_to') ?? '', url) : url;
  return stepUp.pathname === '/step-up' ? (stepUp.searchParams.get('return_to') ?? undefined) : undefined;
}

/** The portal, for requests without a browser: an in-process site or a site of `npm run demo`. */
export interface PortalRequests {
  get(path: string): request.Test;
  post(path: string): request.Test;
}

/**
 * Enrols an authenticator app for the signed-in user over HTTP, as the enrolment form would, and resolves to the
 * session cookie raised to two factors (the portal may rotate it) with the app and the recovery codes shown.
 *
 * @example
 * const { cookie, app } = await enrolOverHttp(t.site('auth'), new URL(t.url('auth')).origin, cookie);
 */
export async function enrolOverHttp(
  auth: PortalRequests,
  origin: string,
  cookie: string,
  cookieName = 'sso.sid',
  replacing?: AuthenticatorApp,
): Promise<{ cookie: string; app: AuthenticatorApp; recoveryCodes: string[] }> {
  const page = await auth.get('/two-factor/totp').set('Cookie', cookie).set('Accept', 'text/html');
  if (page.status !== 200) throw new Error(`the enrolment page answered ${page.status}`);
  const secret = /data-totp-secret>([A-Z2-7 ]+)</.exec(page.text)![1]!.replace(/ /g, '');
  const pending = /name="pending" value="([^"]+)"/.exec(page.text)![1]!;
  const app = new AuthenticatorApp(secret, replacing);
  const done = await auth
    .post('/two-factor/totp')
    .set('Origin', origin)
    .set('Cookie', cookie)
    .type('form')
    .send({ pending, code: await app.nextCode(), return_to: '' });
  if (done.status !== 200) throw new Error(`turning the authenticator app on answered ${done.status}`);
  const recoveryCodes = [...done.text.matchAll(/<li><code>([A-Z0-9-]+)<\/code><\/li>/g)].map((match) => match[1]!);
  return { cookie: setCookieValue(done, cookieName) ?? cookie, app, recoveryCodes };
}
