import helmet, { type HelmetOptions } from 'helmet';
import type { RequestHandler } from 'express';
import { checkOptions, type OptionSchema } from '../util/options';

/**
 * Options of {@link securityHeaders}: anything helmet takes, over the kit's preset. `contentSecurityPolicy.directives`
 * is merged per directive (a directive given replaces the preset's, `null` removes it, the rest stay); every other
 * option replaces the preset's value.
 */
export type SecurityHeadersOptions = HelmetOptions;

type CspOptions = Exclude<NonNullable<HelmetOptions['contentSecurityPolicy']>, boolean>;
type Directives = NonNullable<CspOptions['directives']>;

/** The strict policy: nothing inline, nothing from other origins, no framing, forms only to this origin. */
const PRESET_DIRECTIVES: Readonly<Record<string, readonly string[]>> = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
  'base-uri': ["'none'"],
  'object-src': ["'none'"],
};

// helmet's own aliases: each pair names one header, and helmet refuses both at once.
const ALIASES: Readonly<Record<string, string>> = {
  hsts: 'strictTransportSecurity',
  noSniff: 'xContentTypeOptions',
  dnsPrefetchControl: 'xDnsPrefetchControl',
  ieNoOpen: 'xDownloadOptions',
  frameguard: 'xFrameOptions',
  permittedCrossDomainPolicies: 'xPermittedCrossDomainPolicies',
  hidePoweredBy: 'xPoweredBy',
  xssFilter: 'xXssProtection',
};

const objectOrBoolean = { type: ['object', 'boolean'] } as const;
const SCHEMA: OptionSchema = {
  contentSecurityPolicy: {
    type: ['object', 'boolean'],
    members: {
      directives: { type: 'object', expected: 'an object of directives, e.g. { connectSrc: ["\'self\'", "https://api.example.test"] }' },
      useDefaults: { type: 'boolean' },
      reportOnly: { type: 'boolean' },
    },
  },
  crossOriginEmbedderPolicy: objectOrBoolean,
  crossOriginOpenerPolicy: objectOrBoolean,
  crossOriginResourcePolicy: objectOrBoolean,
  originAgentCluster: { type: 'boolean' },
  referrerPolicy: objectOrBoolean,
  strictTransportSecurity: objectOrBoolean,
  xContentTypeOptions: { type: 'boolean' },
  xDnsPrefetchControl: objectOrBoolean,
  xDownloadOptions: { type: 'boolean' },
  xFrameOptions: objectOrBoolean,
  xPermittedCrossDomainPolicies: objectOrBoolean,
  xPoweredBy: { type: 'boolean' },
  xXssProtection: { type: 'boolean' },
  ...Object.fromEntries(Object.entries(ALIASES).map(([alias]) => [alias, objectOrBoolean])),
};

/** `scriptSrc` and `script-src` name one directive; helmet accepts both spellings. */
function directiveName(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

/** The preset's directives with the caller's merged in, one directive at a time. */
function mergeDirectives(given: Directives | undefined): Directives {
  const merged: Record<string, Directives[string]> = { ...PRESET_DIRECTIVES };
  for (const [name, value] of Object.entries(given ?? {})) {
    const key = directiveName(name);
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return merged;
}

function contentSecurityPolicy(given: HelmetOptions['contentSecurityPolicy']): CspOptions | false {
  if (given === false) return false;
  const options: CspOptions = given === undefined || given === true ? {} : given;
  return { useDefaults: false, ...options, directives: mergeDirectives(options.directives) };
}

/**
 * helmet with the kit's preset: a strict Content-Security-Policy without inline scripts (the kit's pages need
 * none), `frame-ancestors 'none'` against clickjacking of the login and QR pages, HSTS, and a same-origin referrer
 * policy so a code or `return_to` in a URL never leaks to another site. A CSP override changes only the directives
 * it names: `{ contentSecurityPolicy: { directives: { connectSrc: ["'self'", api] } } }` keeps every other
 * directive of the strict policy.
 *
 * @example
 * app.use(securityHeaders({ contentSecurityPolicy: { directives: { connectSrc: ["'self'", 'https://api.example.test'] } } }));
 */
export function securityHeaders(options: SecurityHeadersOptions = {}): RequestHandler {
  checkOptions('securityHeaders', options, SCHEMA, { exclusive: Object.entries(ALIASES).map(([alias, name]) => [name, alias]) });
  const given: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(options)) given[ALIASES[name] ?? name] = value;
  const settings = {
    // same-origin rather than no-referrer: under no-referrer browsers send `Origin: null` with same-origin form
    // posts, which the kit's CSRF origin check must refuse. Other sites still get no referrer.
    referrerPolicy: { policy: 'same-origin' },
    strictTransportSecurity: { maxAge: 31536000, includeSubDomains: true },
    ...given,
    contentSecurityPolicy: contentSecurityPolicy(options.contentSecurityPolicy),
  };
  return helmet(settings as HelmetOptions);
}
