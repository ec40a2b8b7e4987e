import type { Browser, BrowserContext, Page } from 'playwright-core';
import { addVirtualAuthenticator, launchChromium, type VirtualAuthenticator } from '../helpers/browser';
import { startDemoProcesses, type DemoProcesses } from '../helpers/demo';
import { checkPage } from '../helpers/page-checks';

// Passkeys in headless Chromium against the demo (every site its own process behind one front door), with
// Chromium's own virtual authenticator driven over CDP: a platform authenticator holding resident keys and
// verifying the user, as a laptop's fingerprint reader would. Nothing is stubbed: the browser runs the portal's
// script under its strict CSP, creates and signs with real keys, and the portal verifies them.
jest.setTimeout(120_000);

/** The passkeys the journeys registered, by user, with their private keys, to carry into a later browser. */
const saved = new Map<string, unknown>();

/** The virtual authenticator, holding the passkey saved for `carry` when one is named. */
async function authenticatorHolding(page: Page, carry?: string): Promise<VirtualAuthenticator> {
  const authenticator = await addVirtualAuthenticator(page);
  if (carry !== undefined) {
    await authenticator.cdp.send('WebAuthn.addCredential', {
      authenticatorId: authenticator.authenticatorId,
      credential: saved.get(carry) as never,
    });
  }
  return authenticator;
}

async function savePasskey(authenticator: VirtualAuthenticator, username: string): Promise<void> {
  const { credentials } = await authenticator.cdp.send('WebAuthn.getCredentials', { authenticatorId: authenticator.authenticatorId });
  saved.set(username, credentials[0]);
}

/** Makes the page's browser look like one without passkey autofill, so sign-in goes through the button. */
async function withoutAutofill(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const credential = (globalThis as unknown as { PublicKeyCredential: { isConditionalMediationAvailable?: () => Promise<boolean> } })
      .PublicKeyCredential;
    credential.isConditionalMediationAvailable = () => Promise.resolve(false);
  });
}

describe('passkeys in the browser', () => {
  let t: DemoProcesses;
  let browser: Browser;
  const cspViolations: string[] = [];

  beforeAll(async () => {
    t = await startDemoProcesses();
    browser = await launchChromium(['sso.localhost']);
  }, 150_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    return { context, page };
  }

  async function passwordLogin(page: Page, username: string, target: string): Promise<void> {
    await page.goto(target);
    await page.waitForURL((url) => url.pathname === '/login');
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(`${username}-password`);
    await Promise.all([page.waitForURL(target), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
  }

  async function addPasskey(page: Page, name: string): Promise<void> {
    await page.getByLabel('Name of the new passkey').fill(name);
    await Promise.all([page.waitForURL((url) => url.search === '?added=1'), page.getByRole('button', { name: 'Add a passkey' }).click()]);
    await page.locator('.device', { hasText: name }).waitFor();
  }

  async function signOut(page: Page): Promise<void> {
    await page.goto(t.url('auth', '/sessions'));
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/login'),
      page.getByRole('button', { name: 'Sign out of this browser' }).click(),
    ]);
  }

  it('registers a passkey at the portal, signs out, signs in with the passkey alone and reaches admin on another subdomain', async () => {
    const { context, page } = await newPage();
    const authenticator = await authenticatorHolding(page);
    await passwordLogin(page, 'alice', t.url('auth', '/passkeys'));
    await addPasskey(page, 'Test laptop');
    await checkPage(page, 'portal-passkeys');
    const { credentials } = await authenticator.cdp.send('WebAuthn.getCredentials', { authenticatorId: authenticator.authenticatorId });
    expect(credentials).toHaveLength(1);
    // Discoverable, for the parent domain: one passkey for every site of the domain.
    expect(credentials[0]).toMatchObject({ isResidentCredential: true, rpId: t.domain });

    // Conditional UI: the login page that signing out lands on asks for a passkey through the username field's
    // autofill as it loads; the virtual authenticator answers at once, as a user picking the passkey from the
    // autofill list would, and the browser leaves the login page signed in.
    await signOut(page);
    await page.waitForURL((url) => url.pathname !== '/login');
    await page.goto(t.url('admin'));
    await expect(page.locator('#reports').textContent()).resolves.toContain('3 orders today');
    const me = await page.evaluate(async () => (await fetch('/me')).json());
    expect(me).toMatchObject({ id: 'directory:demo|alice', method: 'passkey' });
    const after = await authenticator.cdp.send('WebAuthn.getCredentials', { authenticatorId: authenticator.authenticatorId });
    expect(after.credentials[0]?.signCount).toBeGreaterThan(0);

    // A browser without passkey autofill: the button signs in. (Turned off before signing out, or the login page
    // that logout lands on would sign straight back in through autofill.)
    await withoutAutofill(page);
    await signOut(page);
    await page.goto(t.url('admin'));
    await page.waitForURL((url) => url.hostname === `auth.${t.domain}`);
    await expect(page.locator('#username').getAttribute('autocomplete')).resolves.toBe('username webauthn');
    await checkPage(page, 'portal-login-passkeys');
    await Promise.all([page.waitForURL(t.url('admin')), page.getByRole('button', { name: 'Use a passkey' }).click()]);
    await expect(page.locator('#who').getAttribute('data-method')).resolves.toBe('passkey');
    expect(cspViolations).toEqual([]);
    // Saved as it is now: a copy with an older signature counter would be refused as a clone.
    await savePasskey(authenticator, 'alice');
    await context.close();
  });

  it("refuses Chromium's own assertion when it is replayed", async () => {
    const { context, page } = await newPage();
    const authenticator = await authenticatorHolding(page);
    await withoutAutofill(page);
    await passwordLogin(page, 'bob', t.url('auth', '/passkeys'));
    await addPasskey(page, 'Bob key');
    await signOut(page);
    let posted: string | undefined;
    page.on('request', (req) => {
      if (req.method() === 'POST' && new URL(req.url()).pathname === '/passkeys/sign-in') posted = req.postData() ?? undefined;
    });
    await page.goto(`${t.url('auth', '/login')}?return_to=${encodeURIComponent(t.url('shop'))}`);
    await Promise.all([page.waitForURL(t.url('shop')), page.getByRole('button', { name: 'Use a passkey' }).click()]);
    expect(posted).toBeDefined();
    // The same signed response again, from the portal's own origin: its challenge was spent by the first use.
    await page.goto(t.url('auth', '/login'));
    const replay = await page.evaluate(async (body) => {
      const res = await fetch('/passkeys/sign-in', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
      return { status: res.status, body: (await res.json()) as { code?: string } };
    }, posted!);
    expect(replay).toEqual({ status: 401, body: expect.objectContaining({ code: 'passkey_refused' }) });
    await savePasskey(authenticator, 'bob');
    await context.close();
  });

  it('steps up to phishing-resistant with the passkey on the step-up page, and comes back', async () => {
    const { context, page } = await newPage();
    await authenticatorHolding(page, 'bob');
    await withoutAutofill(page);
    await passwordLogin(page, 'bob', t.url('shop'));
    const stepUp = `${t.url('auth', '/step-up')}?acr=phr&return_to=${encodeURIComponent(t.url('shop'))}`;
    await page.goto(stepUp);
    const passkey = page.locator('form[data-method="passkey"]');
    await Promise.all([page.waitForURL(t.url('shop')), passkey.getByRole('button', { name: 'Continue' }).click()]);
    // The session now meets the requirement: the step-up page sends the browser straight back.
    await page.goto(stepUp);
    await page.waitForURL(t.url('shop'));
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  it('asks a user who has a passkey for a second factor before adding another, then lists, renames and removes', async () => {
    const { context, page } = await newPage();
    const authenticator = await authenticatorHolding(page, 'alice');
    await withoutAutofill(page);
    // A password alone (a stolen one, say) does not add a passkey to an account that has a second factor.
    await passwordLogin(page, 'alice', t.url('auth', '/passkeys'));
    await expect(page.locator('#passkey-add').count()).resolves.toBe(0);
    const refused = await page.evaluate(async () => (await fetch('/passkeys/registration/options', { method: 'POST' })).status);
    expect(refused).toBe(401);
    await page.getByRole('link', { name: 'confirm it is you with your second factor' }).click();
    await page.waitForURL((url) => url.pathname === '/step-up');
    await Promise.all([
      page.waitForURL(t.url('auth', '/passkeys')),
      page.locator('form[data-method="passkey"]').getByRole('button', { name: 'Continue' }).click(),
    ]);
    // The same authenticator is not registered twice: it holds a credential the options exclude.
    await page.getByLabel('Name of the new passkey').fill('Same device');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.locator('#passkey-status:not([hidden])').waitFor();
    // In words, not the browser's InvalidStateError text.
    await expect(page.locator('#passkey-status').textContent()).resolves.toBe('This device already holds a passkey for your account.');
    await expect(page.locator('.device').count()).resolves.toBe(1);
    // Another device (here: the same virtual authenticator emptied) can be added.
    const held = (await authenticator.cdp.send('WebAuthn.getCredentials', { authenticatorId: authenticator.authenticatorId })).credentials;
    await authenticator.cdp.send('WebAuthn.removeCredential', {
      authenticatorId: authenticator.authenticatorId,
      credentialId: held[0]!.credentialId,
    });
    await addPasskey(page, 'Second key');
    const item = page.locator('li', { hasText: 'Second key' });
    await item.getByLabel('New name for Second key').fill('Renamed key');
    await Promise.all([page.waitForURL((url) => url.search === '?renamed=1'), item.getByRole('button', { name: 'Rename' }).click()]);
    const renamed = page.locator('li', { hasText: 'Renamed key' });
    await Promise.all([page.waitForURL((url) => url.search === '?removed=1'), renamed.getByRole('button', { name: /Remove/ }).click()]);
    await expect(page.locator('li', { hasText: 'Renamed key' }).count()).resolves.toBe(0);
    await context.close();
  });
});
