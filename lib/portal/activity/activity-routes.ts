import type { Request, Response, Router } from 'express';
import { eventsFor } from '../../events/event-source';
import type { SecurityEvent } from '../../events/security-event';
import { guarded } from '../../http/handlers';
import { allowSameOriginReferrer } from '../login-page';
import type { PortalSettings } from '../portal-options';
import { OptionsError } from '../../util/options';
import { requestOrigin } from '../../util/request-origin';
import { activityEntries, renderActivityPage } from './activity-page';

const SHOWN = 50;
// Failed attempts typed with the user's username are kept under its keyed hash (no user id is known at that point);
// the page finds the hashes in the user's own successful sign-ins.
const MAX_USERNAMES = 3;
const ABOUT_THE_ACCOUNT = new Set(['signin.failed', 'request.throttled']);

/** The user's own events and the failed attempts on the usernames they signed in with, newest first. */
async function recentActivity(events: NonNullable<ReturnType<typeof eventsFor>>, userId: string): Promise<SecurityEvent[]> {
  const own = await events.recentEvents(userId, { limit: SHOWN * 2 });
  const hashes = [...new Set(own.map((event) => event.usernameHash).filter((hash): hash is string => typeof hash === 'string'))];
  const attempts = await Promise.all(hashes.slice(0, MAX_USERNAMES).map((hash) => events.recentEvents(`#${hash}`, { limit: SHOWN })));
  const onAccount = attempts.flat().filter((event) => ABOUT_THE_ACCOUNT.has(event.type));
  return [...own, ...onAccount].sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0));
}

/**
 * Mounts `GET /activity`, the signed-in user's "Recent security activity" page, read from the events' stream or
 * table (`events.recentEvents`): sign-ins with method, device and network, failed attempts on the account, factor
 * changes, sessions an administrator ended; with "this wasn't me" leading to the sessions page and the password
 * change. A store outage is a 503, like every page of the portal.
 *
 * @example
 * mountActivity(router, settings);
 */
export function mountActivity(router: Router, settings: PortalSettings): void {
  router.get(
    '/activity',
    guarded(async function showActivity(req: Request, res: Response) {
      if (!req.user) {
        const origin = requestOrigin(req);
        const here = origin === undefined ? '' : `?return_to=${encodeURIComponent(`${origin}${req.originalUrl.split('?')[0]}`)}`;
        res.redirect(303, `${req.baseUrl}/login${here}`);
        return;
      }
      const events = eventsFor(req, settings.events);
      let found: SecurityEvent[] | undefined;
      try {
        found = events === undefined ? undefined : await recentActivity(events, req.user.id);
      } catch (error) {
        // No sink keeps events (only logs): the page says so. Anything else (an outage) is the error page's.
        if (!(error instanceof OptionsError)) throw error;
      }
      allowSameOriginReferrer(res);
      res.setHeader('Cache-Control', 'no-store');
      res.type('html').send(
        renderActivityPage({
          assetsPath: settings.assetsPath,
          userName: req.user.name,
          entries: activityEntries(found ?? []).slice(0, SHOWN),
          sessionsUrl: `${req.baseUrl}/sessions`,
          passwordChangeUrl: `${req.baseUrl}/password/change`,
          recorded: found !== undefined,
        }),
      );
    }),
  );
}
