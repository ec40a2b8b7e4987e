import { requestJson } from '../../lib/oidc/http-client';
import { startHttpServer, type TestHttpServer } from '../helpers/jose-tokens';
import { freePort } from '../helpers/redis';

const call = { provider: 'corp', what: 'token endpoint', timeoutMs: 300 };

describe('requestJson (every call to the identity provider)', () => {
  let server: TestHttpServer;
  const pending = new Set<NodeJS.Timeout>();

  beforeAll(async () => {
    server = await startHttpServer();
  });
  afterAll(async () => {
    for (const timer of pending) clearTimeout(timer);
    await server.close();
  });

  it('returns status and parsed JSON, also for error statuses', async () => {
    server.handle((_req, res) => {
      res.writeHead(400, { 'Content-Type': 'application/json' });
      res.end('{"error":"invalid_grant"}');
    });
    await expect(requestJson(server.url, { method: 'POST' }, call)).resolves.toEqual({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('is a 502 when the answer is not JSON', async () => {
    server.handle((_req, res) => res.end('<html>down for maintenance</html>'));
    await expect(requestJson(server.url, { method: 'GET' }, call)).rejects.toMatchObject({ status: 502, code: 'idp_bad_response' });
  });

  it('does not follow redirects (a redirecting endpoint is misconfigured): 502', async () => {
    server.handle((_req, res) => {
      res.writeHead(302, { Location: 'https://evil.example.net/token' });
      res.end();
    });
    await expect(requestJson(server.url, { method: 'POST' }, call)).rejects.toMatchObject({ status: 502 });
  });

  it('is a 503 within the timeout when the headers never come', async () => {
    server.handle((_req, res) => {
      pending.add(setTimeout(() => res.end('{}'), 5000));
    });
    const started = Date.now();
    await expect(requestJson(server.url, { method: 'GET' }, call)).rejects.toMatchObject({ status: 503, code: 'idp_unavailable' });
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('is a 503 within the timeout when the body trickles in too slowly', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"access_token":');
      pending.add(setTimeout(() => res.end('"late"}'), 5000));
    });
    const started = Date.now();
    await expect(requestJson(server.url, { method: 'GET' }, call)).rejects.toMatchObject({ status: 503 });
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('is a 503 when the connection is refused', async () => {
    await expect(requestJson(`http://127.0.0.1:${await freePort()}/token`, { method: 'GET' }, call)).rejects.toMatchObject({ status: 503 });
  });

  it('carries Retry-After on both 502 and 503', async () => {
    server.handle((_req, res) => res.end('not json'));
    await expect(requestJson(server.url, { method: 'GET' }, call)).rejects.toMatchObject({
      headers: { 'Retry-After': expect.any(String) },
    });
  });
});
