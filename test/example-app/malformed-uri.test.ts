import { createAdmin } from '../../example-app/admin/admin';
import { createApi } from '../../example-app/api/api';
import { createAuth } from '../../example-app/auth/auth';
import type { SiteName } from '../../example-app/common/config';
import type { SiteFactory } from '../../example-app/common/run-site';
import { createIdp } from '../../example-app/idp/idp';
import { createPartner } from '../../example-app/partner/partner';
import { createShop } from '../../example-app/shop/shop';
import { portalLogin, startInProcessSite, type InProcessSite } from '../helpers/demo-sites';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';

// The README promises 400 malformed_uri for a malformed percent-escape in the path: on every site of the demo, as a
// newcomer who types one would see it, whatever route (or none) the path would have reached and whoever asks.
const SITES: Array<[SiteName, SiteFactory, 'html' | 'json']> = [
  ['auth', createAuth, 'html'],
  ['shop', createShop, 'html'],
  ['admin', createAdmin, 'html'],
  ['api', createApi, 'json'],
  ['idp', createIdp, 'html'],
  ['partner', createPartner, 'html'],
];
const PATHS = ['/%E0%A4%A', '/%ZZ', '/login/%', '/oidc/%E0%A4%A', '/assets/%ED%A0%80', '/notes/%E0%A4%A'];

describe('a malformed percent-escape on the demo sites', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  const sites = new Map<SiteName, InProcessSite>();
  let cookie: string;

  beforeAll(async () => {
    redis = await testRedisStore('demo-malformed-uri');
    for (const [name, factory] of SITES) sites.set(name, await startInProcessSite(name, factory, redis.store));
    cookie = await portalLogin(sites.get('auth')!, 'alice', 'alice-password');
  });

  afterAll(async () => {
    for (const site of sites.values()) await site.running.close();
    await redis?.cleanup();
  });

  it.each(SITES)(
    'answers 400 malformed_uri on %s, anonymous or signed in, to an API client and a browser',
    async (name, _factory, pages) => {
      const site = sites.get(name)!;
      for (const path of PATHS) {
        for (const withCookie of [undefined, cookie]) {
          const api = site.get(path).set('Accept', 'application/json');
          const res = await (withCookie ? api.set('Cookie', withCookie) : api);
          expectProblem(res, 400, 'malformed_uri');
          expect(res.text).not.toContain(path.slice(path.lastIndexOf('/') + 1));
          const navigation = site.get(path).set('Accept', 'text/html,application/xhtml+xml').set('Sec-Fetch-Mode', 'navigate');
          const page = await (withCookie ? navigation.set('Cookie', withCookie) : navigation);
          expect({ path, signedIn: Boolean(withCookie), status: page.status, type: page.headers['content-type'] }).toEqual({
            path,
            signedIn: Boolean(withCookie),
            status: 400,
            type: pages === 'html' ? expect.stringMatching(/^text\/html/) : expect.stringMatching(/^application\/problem\+json/),
          });
        }
      }
    },
  );
});
