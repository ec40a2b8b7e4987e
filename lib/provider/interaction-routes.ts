import express, { type NextFunction, type Request, type Response, Router } from 'express';
import type Provider from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { InteractionResults } from 'oidc-provider' with { 'resolution-mode': 'import' };
import { BadRequestError } from '../http/errors';
import { guarded } from '../http/handlers';
import { authenticationOf } from '../session/authentication';
import { AUTHENTICATION_LEVELS, meetsRequirement, type AuthenticationLevel } from '../session/step-up';
import type { SessionUser } from '../session/types';
import { debugChannel } from '../util/debug';
import { extendFormAction } from '../portal/login-page';
import { renderConsentPage, renderContinuePage } from './provider-pages';
import { asksConsentEveryTime } from './client-metadata';
import type { ResolvedProviderOptions } from './provider-options';
import { CONSENT_TTL_DAYS, type ProviderRecords } from './provider-records';
import { CONNECTED_APPS_PATH } from './connected-apps';

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

const debug = debugChannel('oidc');

/** What {@link sessionShortfall} weighs besides the session and the request. */
export interface ShortfallClock {
  nowSeconds: number;
  /** Epoch milliseconds when this interaction first sent the user to sign in again; undefined before that. */
  reauthenticationAskedAt: number | undefined;
}

/**
 * Why the portal session cannot answer this login as it is: `login` (there is none), `fresh` (`prompt=login`
 * needs a sign-in after the request, `max_age` one more recent than the session's), `acr` (a level it has not
 * reached); undefined when it can.
 *
 * @example
 * sessionShortfall(req.user, interaction, { nowSeconds, reauthenticationAskedAt: undefined }); // 'fresh' after prompt=login
 */
export function sessionShortfall(
  user: SessionUser | undefined,
  interaction: Pick<Interaction, 'params' | 'prompt'>,
  clock: ShortfallClock,
): 'login' | 'fresh' | 'acr' | undefined {
  if (!user) return 'login';
  const authentication = authenticationOf(user);
  const { params, prompt } = interaction;
  if (prompt.reasons.includes('login_prompt')) {
    const asked = clock.reauthenticationAskedAt;
    // A new login, or a factor presented at the step-up page in a later second than the request, is fresh.
    const fresh = asked !== undefined && (user.authenticatedAt > asked || authentication.authTime > Math.floor(asked / 1000));
    if (!fresh) return 'fresh';
  }
  const maxAge = Number(params.max_age);
  if (params.max_age !== undefined && Number.isFinite(maxAge) && clock.nowSeconds - authentication.authTime > maxAge) return 'fresh';
  const acrValues = requestedAcrValues(params.acr_values);
  if (acrValues.length > 0 && !acrValues.includes(authentication.acr)) {
    // The kit's levels are ordered (phr ≥ 2fa ≥ 1fa): a session at or above the weakest level asked meets it.
    const weakest = weakestLevel(acrValues);
    if (weakest === undefined || !meetsRequirement(authentication, { acr: weakest }, clock.nowSeconds)) return 'acr';
  }
  return undefined;
}

function requestedAcrValues(value: unknown): string[] {
  return typeof value === 'string' && value !== '' ? value.split(' ').filter(Boolean) : [];
}

/** The weakest of the kit's levels among requested acr values; undefined when none is one of the kit's. */
function weakestLevel(values: readonly string[]): AuthenticationLevel | undefined {
  return AUTHENTICATION_LEVELS.find((level) => values.includes(level));
}

/**
 * The provider's own session may still hold the account of an earlier portal session (it signed out, another
 * signed in). oidc-provider would end that session with an auto-submitting page; the portal session is the
 * authority, so the stale session is dropped here and the login continues in a fresh one.
 */
async function forgetOtherAccount(provider: Provider, interaction: Interaction, userId: string): Promise<void> {
  const previous = interaction.session;
  if (!previous?.accountId || previous.accountId === userId) return;
  const stale = previous.uid ? await provider.Session.findByUid(previous.uid) : undefined;
  await stale?.destroy();
  delete interaction.session;
  await interaction.save(Math.max(1, interaction.exp - Math.floor(Date.now() / 1000)));
}

/** True when the navigation began on a page of the portal itself (by Sec-Fetch-Site, else the Referer's origin). */
function cameFromPortalPage(req: Request, issuer: string): boolean {
  if (req.get('sec-fetch-site') === 'same-origin') return true;
  const referer = req.get('referer');
  if (!referer) return false;
  try {
    return new URL(referer).origin === issuer;
  } catch {
    return false;
  }
}

function interactionUrl(settings: ResolvedProviderOptions, uid: string): string {
  return `${settings.issuer}${settings.pathPrefix}/interaction/${encodeURIComponent(uid)}`;
}

function withQuery(base: string, query: Record<string, string>): string {
  const url = new URL(base);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return url.href;
}

/**
 * The provider's interaction routes, where oidc-provider hands a login to the portal: `GET <prefix>/interaction/:uid`
 * answers with the portal session (or sends the browser to the portal's login or step-up page and back), shows the
 * consent page to third-party clients, and `POST …/consent` / `POST …/abort` take the user's answer.
 *
 * @example
 * router.use(interactionRoutes(() => provider, settings, records));
 */
export function interactionRoutes(
  providerOf: () => Promise<Provider>,
  settings: ResolvedProviderOptions,
  records: ProviderRecords,
): Router {
  const router = Router();
  const base = `${settings.pathPrefix}/interaction/:uid`;
  const parseForm = express.urlencoded({ extended: false, limit: '2kb', parameterLimit: 5 });

  async function signInAgainUrl(interaction: Interaction, shortfall: 'login' | 'fresh' | 'acr'): Promise<string> {
    const returnTo = interactionUrl(settings, interaction.uid);
    if (shortfall === 'login') return withQuery(settings.sessions.context.loginUrl, { return_to: returnTo });
    // Only a sign-in after this moment counts as the fresh one prompt=login asked for.
    await records.askedReauthentication(interaction.uid);
    const requested = requestedAcrValues(interaction.params.acr_values);
    const weakest = weakestLevel(requested);
    const maxAge = interaction.params.max_age;
    // acr_values as asked, and the kit step-up page's own acr/max_age, so either kind of page knows what to ask.
    const query: Record<string, string> = {
      ...(requested.length > 0 ? { acr_values: requested.join(' ') } : {}),
      ...(weakest === undefined ? {} : { acr: weakest }),
      ...(typeof maxAge === 'string' || typeof maxAge === 'number' ? { max_age: String(maxAge) } : {}),
    };
    if (weakest === undefined && query.max_age === undefined) {
      // prompt=login: a sign-in after this request; max_age=0 asks the step-up page for exactly that.
      query.acr = '1fa';
      query.max_age = '0';
    }
    return withQuery(settings.stepUpUrl, { ...query, return_to: returnTo });
  }

  async function finish(req: Request, res: Response, result: InteractionResults, merge: boolean): Promise<void> {
    const provider = await providerOf();
    await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: merge });
  }

  router.get(
    base,
    guarded(async function continueProviderLogin(req: Request, res: Response) {
      const provider = await providerOf();
      const interaction = await provider.interactionDetails(req, res);
      res.setHeader('Cache-Control', 'no-store');
      if (interaction.prompt.name === 'login') {
        const user = req.user;
        const shortfall = sessionShortfall(user, interaction, {
          nowSeconds: Math.floor(Date.now() / 1000),
          reauthenticationAskedAt: await records.reauthenticationAskedAt(interaction.uid),
        });
        if (shortfall !== undefined || !user) {
          debug(
            'provider login %s: the portal session %s',
            interaction.uid,
            shortfall === 'login' ? 'is absent' : `needs step-up (${shortfall})`,
          );
          res.redirect(303, await signInAgainUrl(interaction, shortfall ?? 'login'));
          return;
        }
        await forgetOtherAccount(provider, interaction, user.id);
        const authentication = authenticationOf(user);
        await records.saveAccount(user);
        const login = {
          accountId: user.id,
          ts: authentication.authTime,
          acr: authentication.acr,
          amr: [...authentication.amr],
          remember: true,
        };
        if (cameFromPortalPage(req, settings.issuer)) {
          // The navigation began on a portal page (the login form): continue outside that page's form-action rule.
          const resumeUrl = await provider.interactionResult(req, res, { login }, { mergeWithLastSubmission: false });
          res.type('html').send(renderContinuePage(settings.assetsPath, resumeUrl));
          return;
        }
        await finish(req, res, { login }, false);
        return;
      }
      if (interaction.prompt.name === 'consent') {
        const clientId = String(interaction.params.client_id);
        const client = settings.clients.find((candidate) => candidate.clientId === clientId);
        const missing = (interaction.prompt.details.missingOIDCScope as string[] | undefined) ?? [];
        // The answer redirects to the client: its origin must be allowed as this page's form target.
        extendFormAction(res, [new URL(String(interaction.params.redirect_uri)).origin]);
        res.type('html').send(
          renderConsentPage({
            assetsPath: settings.assetsPath,
            clientName: client?.name ?? clientId,
            userName: req.user?.name ?? '',
            scopes: missing,
            allowAction: `${settings.pathPrefix}/interaction/${encodeURIComponent(interaction.uid)}/consent`,
            denyAction: `${settings.pathPrefix}/interaction/${encodeURIComponent(interaction.uid)}/abort`,
            accessTokenSeconds: settings.lifetimes.accessToken,
            refreshTokenSeconds: (client?.grantTypes ?? ['authorization_code', 'refresh_token']).includes('refresh_token')
              ? settings.lifetimes.refreshToken
              : 0,
            rememberedDays: asksConsentEveryTime(client) ? 0 : CONSENT_TTL_DAYS,
            connectedAppsUrl: CONNECTED_APPS_PATH,
          }),
        );
        return;
      }
      throw new BadRequestError({ code: 'unsupported_interaction', detail: 'This sign-in step is not supported.' });
    }),
  );

  router.post(
    `${base}/consent`,
    parseForm,
    guarded(async function grantConsent(req: Request, res: Response) {
      const provider = await providerOf();
      const interaction = await provider.interactionDetails(req, res);
      const accountId = interaction.session?.accountId;
      // The consent is the portal user's: a browser whose portal session changed since the login step cannot give it.
      if (interaction.prompt.name !== 'consent' || !accountId || req.user?.id !== accountId) {
        throw new BadRequestError({ code: 'consent_not_expected', detail: 'There is no consent to give for this sign-in.' });
      }
      const clientId = String(interaction.params.client_id);
      const grant = interaction.grantId
        ? ((await provider.Grant.find(interaction.grantId)) ?? new provider.Grant({ accountId, clientId }))
        : new provider.Grant({ accountId, clientId });
      const missing = (interaction.prompt.details.missingOIDCScope as string[] | undefined) ?? [];
      const claims = (interaction.prompt.details.missingOIDCClaims as string[] | undefined) ?? [];
      if (missing.length > 0) grant.addOIDCScope(missing.join(' '));
      if (claims.length > 0) grant.addOIDCClaims(claims);
      const grantId = await grant.save();
      // A public third party is asked again next time: its consent holds for this request's grant only.
      if (!asksConsentEveryTime(settings.clients.find((candidate) => candidate.clientId === clientId))) {
        await records.rememberConsent(accountId, clientId, missing);
      }
      settings.events?.emit('provider.consent.granted', { reason: 'user', clientId, userId: accountId, scopes: missing }, req);
      await finish(req, res, { consent: { grantId } }, true);
    }),
  );

  router.post(
    `${base}/abort`,
    guarded(async function denyConsent(req: Request, res: Response) {
      if (settings.events) {
        const clientId = (await (await providerOf()).interactionDetails(req, res)).params.client_id;
        settings.events.emit('provider.consent.denied', { reason: 'user', ...(typeof clientId === 'string' ? { clientId } : {}) }, req);
      }
      await finish(req, res, { error: 'access_denied', error_description: 'The user denied the request.' }, false);
    }),
  );

  router.use(base, function interactionFailed(error: unknown, _req: Request, _res: Response, next: NextFunction) {
    // oidc-provider says an expired or unknown interaction as SessionNotFound: a 400 for the user, not a 500.
    if (error instanceof Error && error.name === 'SessionNotFound') {
      next(new BadRequestError({ code: 'interaction_expired', detail: 'This sign-in has expired. Start again from the app.' }));
      return;
    }
    next(error);
  });
  return router;
}
