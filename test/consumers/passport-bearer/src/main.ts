// A CommonJS TypeScript app that already uses passport's types and express-oauth2-jwt-bearer: both declare req.user
// or req.auth, and TypeScript merges those declarations only when they agree with the kit's.
import type { Request } from 'express';
import type { PassportStatic } from 'passport';
import { auth, type AuthResult } from 'express-oauth2-jwt-bearer';
import type { AuthInfo, SessionUser } from 'express-sso-kit';
import { sites } from '../shared/sites.js';

// One req.auth for both libraries, and one req.user for passport and the kit.
export const fromJwtBearer = (req: Request): AuthResult | undefined => req.auth;
export const fromKit = (req: Request): AuthInfo | undefined => req.auth;
export const sessionUser = (req: Request): SessionUser | undefined => req.user;
export const passportUser = (req: Request): Express.User | undefined => req.user;
export type Passport = PassportStatic;

const { shop, start } = sites('passport-bearer');
// express-oauth2-jwt-bearer guards an API next to the kit's session routes.
shop.get('/api/orders', auth({ issuerBaseURL: 'https://issuer.example.test', audience: 'https://api.example.test' }), (req, res) => {
  res.json({ subject: req.auth?.payload.sub ?? null });
});
void start();
