/**
 * `npm run -s demo:token -- alice`: prints a Bearer token for the demo's Notes API, for one of the demo accounts,
 * valid one hour. It is signed with the api's key, derived from the demo secret the running demo uses (DEMO_SECRET,
 * else the one in DEMO_DATA_DIR, `.demo/secret`), for the URLs of the same settings (PORT, DEMO_DOMAIN,
 * DEMO_SECURE or the DEMO_TLS_* pair), so:
 *
 *   curl -H "Authorization: Bearer $(npm run -s demo:token -- alice)" http://api.sso.localhost:8080/notes
 *
 * A real deployment gets such tokens from its authorization server (the portal's OpenID Provider, a client
 * credentials grant); this stands in for it on a laptop.
 */
import { KeySet, TokenService } from 'express-sso-kit';
import { apiTokenSettings } from './api/api';
import { DEMO_ACCOUNTS } from './common/accounts';
import { readDemoConfig } from './common/config';
import { demoSecret } from './launcher/demo-secret';

/**
 * A token the demo api accepts, for `username`, from the environment the demo was started with.
 *
 * @example
 * const token = demoApiToken('alice', process.env);
 */
export function demoApiToken(username: string, env: NodeJS.ProcessEnv): string {
  const account = DEMO_ACCOUNTS.find((candidate) => candidate.username === username);
  if (!account) throw new TypeError(`no demo account "${username}"; use one of ${DEMO_ACCOUNTS.map((a) => a.username).join(', ')}`);
  const secure = (env.DEMO_TLS_CERT && env.DEMO_TLS_KEY) || env.DEMO_SECURE === '1';
  const config = readDemoConfig({
    ...env,
    DEMO_SECRET: demoSecret(env).secret,
    DEMO_PUBLIC_PORT: env.DEMO_PUBLIC_PORT || env.PORT || '8080',
    DEMO_SECURE: secure ? '1' : '0',
  });
  const { key, issuer, audience } = apiTokenSettings(config);
  const tokens = new TokenService({ keys: new KeySet([{ kid: 'demo-api', alg: 'HS256', secret: key }]), issuer });
  return tokens.issueAccessToken({ subject: account.id, audience, clientId: 'demo-token', expiresInSeconds: 3600 }).token;
}

if (require.main === module) {
  try {
    console.log(demoApiToken(process.argv[2] ?? 'alice', process.env));
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  }
}
