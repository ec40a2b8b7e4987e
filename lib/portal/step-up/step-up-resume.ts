import type { Request, Response } from 'express';
import { takeResumableForm } from '../../session/resumable-form';
import { debugChannel } from '../../util/debug';
import { requestOrigin } from '../../util/request-origin';
import { allowSameOriginReferrer } from '../login-page';
import type { PortalSettings } from '../portal-options';
import { renderResumePage } from '../two-factor/two-factor-pages';

const debug = debugChannel('portal');

/**
 * The `resume` of the step-up URL or form: the id `requireSession` gave a kept form, '' for none or a malformed one.
 *
 * @example
 * const resume = resumeOf(req.query.resume);
 */
export function resumeOf(value: unknown): string {
  return typeof value === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(value) ? value : '';
}

/**
 * Sends on the form that waited for this step-up (kept in the session by `requireSession`, named by `resume`): a
 * page that posts it again, once, while fresh, and only to the portal's own origin, so the post arrives as any
 * same-origin form does and passes the origin check, the session and the level again. False when there is none.
 *
 * @example
 * if (await sendResumedForm(settings, req, res, resume)) return;
 */
export async function sendResumedForm(settings: PortalSettings, req: Request, res: Response, resume: string): Promise<boolean> {
  const form = resume ? await takeResumableForm(req, resume) : undefined;
  if (form === undefined || new URL(form.action).origin !== requestOrigin(req)) return false;
  debug('step-up done: sending on the form that waited for it');
  allowSameOriginReferrer(res);
  res.status(200).setHeader('Cache-Control', 'no-store');
  res.type('html').send(renderResumePage({ assetsPath: settings.assetsPath, action: form.action, fields: form.fields }));
  return true;
}
