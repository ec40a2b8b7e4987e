import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFrontDoor, type FrontDoor } from '../../example-app/launcher/front-door';

/** A site that echoes what reached it; `/events` streams one event and then waits until the client goes. */
function startEchoSite(name: string): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (req.url === '/events') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('event: status\ndata: {"status":"scanned"}\n\n');
      return;
    }
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      res.setHeader('Set-Cookie', ['a=1; Path=/', 'b=2; Path=/']);
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ site: name, method: req.method, url: req.url, headers: req.headers, body }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

function send(
  port: number,
  host: string,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: IncomingMessage['headers']; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path ?? '/', headers: { Host: host, ...options.headers } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('the front door of npm run demo', () => {
  let door: FrontDoor;
  let shop: { server: Server; port: number };
  let api: { server: Server; port: number };

  beforeAll(async () => {
    shop = await startEchoSite('shop');
    api = await startEchoSite('api');
    door = await startFrontDoor({ port: 0, host: '127.0.0.1', domain: 'sso.localhost' });
    door.route('shop', shop.port);
    door.route('api', api.port);
    // The partner app's own domain, outside the parent domain, goes to the api's echo here.
    door.routeHost('partner.localhost', api.port);
  });

  afterAll(async () => {
    await door.close();
    for (const site of [shop, api]) {
      site.server.closeAllConnections();
      await new Promise((resolve) => site.server.close(resolve));
    }
  });

  it('routes each request by its Host to the site, keeping the Host and the body', async () => {
    const res = await send(door.port, `api.sso.localhost:${door.port}`, {
      method: 'POST',
      path: '/notes?x=1',
      headers: { 'Content-Type': 'application/json' },
      body: '{"title":"t"}',
    });
    const echoed = JSON.parse(res.text);
    expect(echoed).toMatchObject({ site: 'api', method: 'POST', url: '/notes?x=1', body: '{"title":"t"}' });
    expect(echoed.headers.host).toBe(`api.sso.localhost:${door.port}`);
    expect(JSON.parse((await send(door.port, `SHOP.sso.localhost:${door.port}`)).text).site).toBe('shop');
  });

  it('routes a host outside the parent domain by its exact name, and only that name', async () => {
    const partner = await send(door.port, `Partner.Localhost:${door.port}`);
    expect(JSON.parse(partner.text)).toMatchObject({ site: 'api', headers: { host: `Partner.Localhost:${door.port}` } });
    expect((await send(door.port, `evil.partner.localhost:${door.port}`)).status).toBe(404);
    expect((await send(door.port, `partner.localhost.evil.test:${door.port}`)).status).toBe(404);
  });

  it('tells the site who the client is and over what, replacing what the client claimed', async () => {
    const res = await send(door.port, `shop.sso.localhost:${door.port}`, {
      headers: { 'X-Forwarded-For': '203.0.113.9', 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'evil.test' },
    });
    const { headers } = JSON.parse(res.text);
    expect(headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-forwarded-host']).toBeUndefined();
  });

  it('passes every Set-Cookie of the answer on', async () => {
    const res = await send(door.port, `shop.sso.localhost:${door.port}`);
    expect(res.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
  });

  it('streams Server-Sent Events as they come (the QR page follows its login this way)', async () => {
    const first = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: door.port, path: '/events', headers: { Host: `shop.sso.localhost:${door.port}` } },
        (res) => {
          res.once('data', (chunk: Buffer) => {
            resolve(chunk.toString());
            req.destroy();
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(first).toContain('event: status');
  });

  it('answers 404 for a host that is no site, and 502 when a site does not answer', async () => {
    expect((await send(door.port, `admin.sso.localhost:${door.port}`)).status).toBe(404);
    expect((await send(door.port, 'shop.evil.test')).status).toBe(404);
    expect((await send(door.port, `sso.localhost:${door.port}`)).status).toBe(404);
    const closed = await startEchoSite('gone');
    door.route('gone', closed.port);
    await new Promise((resolve) => closed.server.close(resolve));
    const res = await send(door.port, `gone.sso.localhost:${door.port}`);
    expect(res.status).toBe(502);
    expect(res.text).toContain('The gone site is not answering.');
  });

  it("answers a browser with a page in the shape of the demo's others (lang, title, landmark), programs with text", async () => {
    const html = { Accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
    const page = await send(door.port, `nope.sso.localhost:${door.port}`, { headers: html });
    expect(page.status).toBe(404);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.text).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(page.text).toContain('<title>No demo site here · express-sso-kit demo</title>');
    expect(page.text).toContain(`<main><h1>No demo site here</h1><p>No demo site answers for this host.</p>`);
    expect(page.text).toContain(`<a href="http://auth.sso.localhost:${door.port}/login">`);
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    const text = await send(door.port, `nope.sso.localhost:${door.port}`, { headers: { Accept: 'application/json, text/html' } });
    expect(text.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(text.text).toBe('No demo site answers for this host.\n');
  });
});
