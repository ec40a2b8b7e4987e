import { createApi, apiTokenSettings } from '../../example-app/api/api';
import { createAuth } from '../../example-app/auth/auth';
import { origin } from '../../example-app/common/config';
import { portalLogin, startInProcessSite, testDemoConfig, type InProcessSite } from '../helpers/demo-sites';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';

// The api site's /notes collection: the methods and results of RFC 9110 and the status codes the kit uses, for
// API clients (Bearer) and the apps' pages (session cookie through CORS).
describe('api /notes', () => {
  const config = testDemoConfig();
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let apiSite: InProcessSite;
  let authSite: InProcessSite;
  let aliceToken: string;
  let bobToken: string;

  async function mint(
    subject: string,
    overrides: { audience?: string; expiresIn?: string | number; issuer?: string } = {},
  ): Promise<string> {
    const { key, issuer, audience } = apiTokenSettings(config);
    // jose is ESM-only; the dynamic import works under the suite's Jest setup.
    const { SignJWT } = await import('jose');
    return new SignJWT({ roles: [] })
      .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
      .setSubject(subject)
      .setIssuer(overrides.issuer ?? issuer)
      .setAudience(overrides.audience ?? audience)
      .setIssuedAt()
      .setExpirationTime(overrides.expiresIn ?? '10m')
      .sign(new TextEncoder().encode(key));
  }

  beforeAll(async () => {
    redis = await testRedisStore('demo-notes');
    apiSite = await startInProcessSite('api', createApi, redis.store, config);
    authSite = await startInProcessSite('auth', createAuth, redis.store, config);
    aliceToken = await mint('alice');
    bobToken = await mint('bob');
  });
  afterAll(async () => {
    await apiSite.running.close();
    await authSite.running.close();
    await redis.cleanup();
  });

  const api = () => apiSite;
  const asAlice = <T extends { set(name: string, value: string): T }>(test: T) => test.set('Authorization', `Bearer ${aliceToken}`);
  async function create(title = 'first', body = 'hello') {
    const res = await asAlice(api().post('/notes')).send({ title, body });
    expect(res.status).toBe(201);
    return res.body as { id: string; title: string; body: string; createdAt: string; updatedAt: string };
  }

  describe('authentication', () => {
    it('answers 401 with a Bearer challenge without a token or session', async () => {
      expectProblem(await api().get('/notes'), 401);
    });

    it.each([
      ['expired', { expiresIn: Math.floor(Date.now() / 1000) - 120 }],
      ['for another audience', { audience: 'http://shop.sso.test:8080' }],
      ['from another issuer', { issuer: 'http://evil.test' }],
    ])('answers 401 for a token %s', async (_label, overrides) => {
      const res = await api()
        .get('/notes')
        .set('Authorization', `Bearer ${await mint('alice', overrides)}`);
      expectProblem(res, 401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    });

    it("keeps each user's notes to themselves (another user gets 404)", async () => {
      const note = await create('private');
      expectProblem(await api().get(`/notes/${note.id}`).set('Authorization', `Bearer ${bobToken}`), 404);
      const list = await api().get('/notes').set('Authorization', `Bearer ${bobToken}`);
      expect(list.body.map((n: { id: string }) => n.id)).not.toContain(note.id);
    });
  });

  describe('GET', () => {
    it('returns the collection as a JSON list of resource objects (200)', async () => {
      const note = await create('listed');
      const res = await asAlice(api().get('/notes'));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Array.isArray(res.body)).toBe(true);
      expect(res.body).toContainEqual(note);
    });

    it('returns one resource object (200), or 404 for an id that never existed', async () => {
      const note = await create('single');
      const res = await asAlice(api().get(`/notes/${note.id}`));
      expect(res.status).toBe(200);
      expect(res.body).toEqual(note);
      expectProblem(await asAlice(api().get('/notes/does-not-exist')), 404);
    });

    it('answers 406 when the client accepts only an unavailable representation', async () => {
      const res = await asAlice(api().get('/notes')).set('Accept', 'text/csv');
      expectProblem(res, 406, 'not_acceptable');
      expect(res.body.available).toEqual(['application/json']);
    });

    it('answers HEAD with the headers of GET and no body', async () => {
      const res = await asAlice(api().head('/notes'));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.text ?? '').toBe('');
    });
  });

  describe('POST', () => {
    it('creates a note: 201, Location of the new item, the complete new resource', async () => {
      const res = await asAlice(api().post('/notes')).send({ title: 'created', body: 'text' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(String),
        title: 'created',
        body: 'text',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(res.headers.location).toBe(`/notes/${res.body.id}`);
      expect((await asAlice(api().get(res.headers.location!))).body).toEqual(res.body);
    });

    it('is not idempotent: the same body twice makes two notes', async () => {
      const a = await create('twice');
      const b = await create('twice');
      expect(a.id).not.toBe(b.id);
    });

    it('answers 400 for malformed JSON and creates nothing', async () => {
      const before = (await asAlice(api().get('/notes'))).body.length;
      const res = await asAlice(api().post('/notes')).set('Content-Type', 'application/json').send('{"title": "broken"');
      expectProblem(res, 400);
      expect((await asAlice(api().get('/notes'))).body.length).toBe(before);
    });

    it('answers 415 for a body that is not JSON', async () => {
      expectProblem(await asAlice(api().post('/notes')).type('form').send({ title: 'form' }), 415);
    });

    it.each([
      [{ body: 'no title' }, 'title'],
      [{ title: '', body: '' }, 'title'],
      [{ title: 'x'.repeat(201), body: '' }, 'title'],
      [{ title: 'no body' }, 'body'],
      [{ title: 't', body: 5 }, 'body'],
      [{ title: 't', body: '', colour: 'red' }, 'colour'],
      [{ title: 't', body: '', id: 'mine' }, 'id'],
    ])('answers 422 with field errors for %j and creates nothing', async (input, field) => {
      const before = (await asAlice(api().get('/notes'))).body.length;
      const res = await asAlice(api().post('/notes')).send(input);
      expectProblem(res, 422, 'validation_failed');
      expect(res.body.errors).toContainEqual({ field, message: expect.any(String) });
      expect((await asAlice(api().get('/notes'))).body.length).toBe(before);
    });

    it('answers 422 for a JSON array instead of an object', async () => {
      expectProblem(await asAlice(api().post('/notes')).send([{ title: 'x', body: '' }]), 422);
    });
  });

  describe('PUT', () => {
    it('replaces the whole resource and returns it complete (200)', async () => {
      const note = await create('before', 'old body');
      const res = await asAlice(api().put(`/notes/${note.id}`)).send({ title: 'after', body: 'new body' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...note, title: 'after', body: 'new body', updatedAt: expect.any(String) });
    });

    it('is idempotent: sending the same representation twice leaves the same resource', async () => {
      const note = await create('idem');
      const first = await asAlice(api().put(`/notes/${note.id}`)).send({ title: 'same', body: 'same' });
      const second = await asAlice(api().put(`/notes/${note.id}`)).send({ title: 'same', body: 'same' });
      expect({ ...second.body, updatedAt: 0 }).toEqual({ ...first.body, updatedAt: 0 });
    });

    it('accepts the read-only fields echoed back unchanged (a GET, edited, PUT back)', async () => {
      const note = await create('echo');
      const res = await asAlice(api().put(`/notes/${note.id}`)).send({ ...note, title: 'echoed' });
      expect(res.status).toBe(200);
      expect(res.body.title).toBe('echoed');
    });

    it('creates the resource at a new id: 201 with Location', async () => {
      const res = await asAlice(api().put('/notes/chosen-id-1')).send({ title: 'chosen', body: '' });
      expect(res.status).toBe(201);
      expect(res.headers.location).toBe('/notes/chosen-id-1');
      expect(res.body).toMatchObject({ id: 'chosen-id-1', title: 'chosen', body: '' });
    });

    it('answers 422 for an incomplete representation and leaves the resource unchanged', async () => {
      const note = await create('complete');
      const res = await asAlice(api().put(`/notes/${note.id}`)).send({ title: 'only a title' });
      expectProblem(res, 422);
      expect(res.body.errors).toContainEqual({ field: 'body', message: expect.any(String) });
      expect((await asAlice(api().get(`/notes/${note.id}`))).body).toEqual(note);
    });

    it('refuses to change a read-only field with 422', async () => {
      const note = await create('ro');
      const res = await asAlice(api().put(`/notes/${note.id}`)).send({ ...note, createdAt: '2000-01-01T00:00:00.000Z' });
      expectProblem(res, 422);
      expect(res.body.errors).toContainEqual({ field: 'createdAt', message: 'is read-only' });
    });
  });

  describe('PATCH', () => {
    it('changes only the given attributes and returns the complete resource (200)', async () => {
      const note = await create('patch me', 'keep this body');
      const res = await asAlice(api().patch(`/notes/${note.id}`)).send({ title: 'patched' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...note, title: 'patched', updatedAt: expect.any(String) });
    });

    it('accepts application/merge-patch+json', async () => {
      const note = await create('merge');
      const res = await asAlice(api().patch(`/notes/${note.id}`))
        .set('Content-Type', 'application/merge-patch+json')
        .send(JSON.stringify({ body: 'merged' }));
      expect(res.status).toBe(200);
      expect(res.body.body).toBe('merged');
    });

    it('answers 422 for an invalid change and leaves the resource unchanged', async () => {
      const note = await create('valid');
      expectProblem(await asAlice(api().patch(`/notes/${note.id}`)).send({ title: 42 }), 422);
      expect((await asAlice(api().get(`/notes/${note.id}`))).body).toEqual(note);
    });

    it('answers 404 for a note that does not exist', async () => {
      expectProblem(await asAlice(api().patch('/notes/nope')).send({ title: 'x' }), 404);
    });
  });

  describe('DELETE', () => {
    it('deletes with 204 and an empty body; the note is then 410 Gone for every method', async () => {
      const note = await create('doomed');
      const res = await asAlice(api().delete(`/notes/${note.id}`));
      expect(res.status).toBe(204);
      expect(res.text ?? '').toBe('');
      expect(res.headers['content-type']).toBeUndefined();
      expectProblem(await asAlice(api().get(`/notes/${note.id}`)), 410, 'gone');
      expectProblem(await asAlice(api().delete(`/notes/${note.id}`)), 410);
      expectProblem(await asAlice(api().put(`/notes/${note.id}`)).send({ title: 'back', body: '' }), 410);
      expectProblem(await asAlice(api().patch(`/notes/${note.id}`)).send({ title: 'back' }), 410);
      expect((await asAlice(api().get('/notes'))).body.map((n: { id: string }) => n.id)).not.toContain(note.id);
    });

    it('answers 404 for a note that never existed', async () => {
      expectProblem(await asAlice(api().delete('/notes/never')), 404);
    });
  });

  describe('methods', () => {
    it.each([
      ['DELETE', '/notes', 'GET, HEAD, POST, OPTIONS'],
      ['PUT', '/notes', 'GET, HEAD, POST, OPTIONS'],
      ['POST', '/notes/some-id', 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS'],
    ])('answers 405 with Allow for %s %s', async (method, path, allow) => {
      const test = method === 'DELETE' ? api().delete(path) : method === 'PUT' ? api().put(path) : api().post(path);
      const res = await asAlice(test).send({});
      expectProblem(res, 405, 'method_not_allowed');
      expect(res.headers.allow!.split(', ').sort()).toEqual(allow.split(', ').sort());
    });

    it('describes the allowed methods on a plain OPTIONS', async () => {
      const res = await api().options('/notes/x');
      expect(res.status).toBe(204);
      expect(res.headers.allow!.split(', ').sort()).toEqual(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'PUT']);
    });
  });

  describe("from the apps' pages (session cookie, CORS)", () => {
    const shopOrigin = () => origin(config, 'shop');

    it('answers a preflight from a sibling app with its origin and credentials allowed', async () => {
      const res = await api()
        .options('/notes')
        .set('Origin', shopOrigin())
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'content-type');
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(shopOrigin());
      expect(res.headers['access-control-allow-credentials']).toBe('true');
      expect(res.headers['access-control-allow-methods']).toContain('POST');
    });

    it('refuses a preflight from an origin outside the domain with 403 and no CORS headers', async () => {
      const res = await api().options('/notes').set('Origin', 'http://evil.other.test').set('Access-Control-Request-Method', 'POST');
      expect(res.status).toBe(403);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('creates a note with the session cookie from the shop page', async () => {
      const cookie = await portalLogin(authSite, 'bob', 'bob-password');
      const res = await api().post('/notes').set('Cookie', cookie).set('Origin', shopOrigin()).send({ title: 'from shop', body: '' });
      expect(res.status).toBe(201);
      expect(res.headers['access-control-allow-origin']).toBe(shopOrigin());
      const list = await api().get('/notes').set('Cookie', cookie).set('Origin', shopOrigin());
      expect(list.body.map((n: { title: string }) => n.title)).toContain('from shop');
    });

    it('refuses a cookie-authenticated write posted by another site (CSRF) with 403', async () => {
      const cookie = await portalLogin(authSite, 'bob', 'bob-password');
      const res = await api()
        .post('/notes')
        .set('Cookie', cookie)
        .set('Origin', 'http://evil.other.test')
        .send({ title: 'forged', body: '' });
      expectProblem(res, 403, 'csrf_origin');
    });
  });
});
