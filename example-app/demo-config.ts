import { validateCookieDomain } from '../lib/session/cookie-domain';

/** Everything the demo reads from its environment, validated. */
export interface DemoEnvironment {
  /** Parent domain of all demo sites. `DEMO_DOMAIN`, default `sso.localhost`. */
  domain: string;
  /** Port the process listens on. `PORT`, default 8080. */
  port: number;
  /** Interface the process listens on. `HOST`, default 127.0.0.1 (0.0.0.0 inside a container). */
  host: string;
  /** Port browsers use (differs from `port` behind a proxy). `DEMO_PUBLIC_PORT`, default `port`. */
  publicPort: number | undefined;
  /** Redis to use. `REDIS_URL`; unset means 127.0.0.1:6379 when it answers, else memory. */
  redisUrl: string | undefined;
  /** `DEMO_SECURE=1`: https URLs and Secure cookies (behind a TLS proxy). Default off: plain http. */
  secure: boolean;
  /** `DEMO_TLS_CERT` and `DEMO_TLS_KEY`: PEM files for `*.<domain>`; the demo then serves https itself. */
  tls: { certPath: string; keyPath: string } | undefined;
}

function port(name: string, raw: string | undefined, fallback: number | undefined): number | undefined {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) throw new TypeError(`${name} must be a port number 0–65535, got "${raw}"`);
  return value;
}

/**
 * Reads and checks the demo's environment variables; a bad value stops the demo with a message naming it.
 *
 * @example
 * const env = readDemoEnvironment(process.env);
 */
export function readDemoEnvironment(env: NodeJS.ProcessEnv): DemoEnvironment {
  const domain = validateCookieDomain(env.DEMO_DOMAIN ?? 'sso.localhost', 'DEMO_DOMAIN');
  const secureRaw = env.DEMO_SECURE ?? '0';
  if (secureRaw !== '0' && secureRaw !== '1') throw new TypeError(`DEMO_SECURE must be 1 or 0, got "${secureRaw}"`);
  const redisUrl = env.REDIS_URL === '' ? undefined : env.REDIS_URL;
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl))
    throw new TypeError(`REDIS_URL must start with redis:// or rediss://, got "${redisUrl}"`);
  const certPath = env.DEMO_TLS_CERT || undefined;
  const keyPath = env.DEMO_TLS_KEY || undefined;
  if ((certPath === undefined) !== (keyPath === undefined))
    throw new TypeError('DEMO_TLS_CERT and DEMO_TLS_KEY go together: set both PEM file paths or neither');
  return {
    domain,
    port: port('PORT', env.PORT, 8080) as number,
    host: env.HOST ?? '127.0.0.1',
    publicPort: port('DEMO_PUBLIC_PORT', env.DEMO_PUBLIC_PORT, undefined),
    redisUrl,
    secure: secureRaw === '1' || certPath !== undefined,
    tls: certPath && keyPath ? { certPath, keyPath } : undefined,
  };
}
