import { randomBytes } from 'node:crypto';
import express from 'express';
import { preparedRequests, type CaseApp } from './harness';

// Answers of about the provider's sizes: a 32-character login id, an ES256 access token of about 520 characters,
// a 43-character refresh token, a 32-character openid.
const ACCESS_TOKEN = `eyJ${'a'.repeat(517)}`;
const REFRESH_TOKEN = 'r'.repeat(43);
const OPENID = 'o'.repeat(32);

/**
 * The floor of a QR login: an Express app answering the six requests of one (create, scan, confirm, redirect,
 * exchange, userinfo) on the provider's paths, with its body parsers and answers of the same shape and size, but
 * canned: no Redis, no tokens signed or verified, no state. Like the provider's router, it first prepares each request
 * and response for added properties (`prepareForProperties`). The QR client drives it exactly like the provider, so
 * the provider's CPU per login minus this one's is what the kit's own work costs.
 *
 * @example
 * const { app } = qrFloorApp();
 */
export function qrFloorApp(): CaseApp {
  const app = express();
  app.disable('x-powered-by');
  app.use(preparedRequests);
  const noStore = (res: express.Response) => res.set('Cache-Control', 'no-store');

  app.get('/sns/oauth2/qrconnect', (req, res) => {
    const id = randomBytes(24).toString('base64url');
    const binding = randomBytes(32).toString('base64url');
    const resource = `${req.protocol}://${req.get('host')}/sns/qr-logins/${id}`;
    noStore(res)
      .cookie('qr_binding', binding, { httpOnly: true, secure: true, sameSite: 'lax', path: '/sns', maxAge: 180_000 })
      .status(201)
      .location(resource)
      .json({
        qr_url: `${resource}/confirmation`,
        status_url: `${resource}/status`,
        events_url: `${resource}/events`,
        redirection_url: `${resource}/redirection`,
        expires_in: 180,
      });
  });
  app.patch('/sns/qr-logins/:id', express.json(), (req, res) => {
    const status = (req.body as { status?: unknown }).status;
    noStore(res).json({
      auth_code: req.params.id,
      status,
      app: { appid: 'shop', name: 'Shop', redirect_uri: 'https://shop.example.test/callback/qr' },
      requested_at: new Date().toISOString(),
      expires_at: new Date(Date.now() + 180_000).toISOString(),
      links: { self: `/sns/qr-logins/${req.params.id}`, confirmation: `/sns/qr-logins/${req.params.id}/confirmation` },
    });
  });
  app.get('/sns/qr-logins/:id/redirection', (req, res) => {
    noStore(res).redirect(302, `https://shop.example.test/callback/qr?code=${randomBytes(24).toString('base64url')}&state=bench`);
  });
  app.post('/sns/oauth2/access_token', express.urlencoded({ extended: false }), (req, res) => {
    if (typeof (req.body as { code?: unknown }).code !== 'string') {
      res.status(400).json({ errcode: 40029, errmsg: 'invalid code' });
      return;
    }
    noStore(res).json({
      access_token: ACCESS_TOKEN,
      expires_in: 7200,
      refresh_token: REFRESH_TOKEN,
      openid: OPENID,
      scope: 'snsapi_login',
    });
  });
  app.get('/sns/userinfo', (req, res) => {
    noStore(res).json({
      openid: req.query.openid,
      nickname: 'User bench-user',
      sex: 0,
      province: '',
      city: '',
      country: '',
      headimgurl: '',
      privilege: [],
      unionid: OPENID,
    });
  });
  return { app };
}
