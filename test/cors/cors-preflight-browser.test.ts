import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Browser, Page } from 'playwright-core';
import { corsPreflight } from '../../lib/cors';
import { errorHandler } from '../../lib/http';
import { launchChromium } from '../helpers/browser';

/**
 * The same rules as cors-preflight.test.ts, seen by a real browser: what Chromium sends, and what a script on
 * another subdomain may read.
 */
describe('corsPreflight in Chromium', () => {
  let server: Server;
  let browser: Browser;
  let port: number;
  let seen: string[] = [];

  beforeAll(async () => {
    const app = express();
    app.use((req, res, next) => {
      // Only the API: the browser's own requests (favicon) come and go at its pace.
      const path = req.path;
      if (path.startsWith('/api/')) res.on('finish', () => seen.push(`${req.method} ${path} ${res.statusCode}`));
      next();
    });
    app.get('/', (_req, res) => {
      res.type('html').send('<!doctype html><title>page</title><p>page</p>');
    });
    // Listening first, so the pattern can name the port the pages use.
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    app.use(
      '/api',
      corsPreflight({
        origins: [`http://*.example.test:${port}`],
        credentials: true,
        methods: ['GET', 'PUT'],
        allowedHeaders: ['Content-Type', 'X-Request-Id'],
        maxAgeSeconds: 600,
      }),
    );
    app.get('/api/notes', (_req, res) => {
      res.json([{ id: 1 }]);
    });
    app.put('/api/notes/:id', (req, res) => {
      res.json({ id: req.params.id, saved: true });
    });
    app.use(errorHandler({ log: false }));
    browser = await launchChromium(['example.test', 'evil-example.test']);
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server.close(resolve));
  });

  async function pageAt(host: string): Promise<Page> {
    const page = await browser.newPage();
    await page.goto(`http://${host}:${port}/`);
    seen = [];
    return page;
  }

  /** Runs fetch in the page; resolves to the status and body, or to "blocked" when the browser refuses. */
  function fetchFrom(page: Page, path: string, init: { method: string; headers?: Record<string, string> }): Promise<string> {
    return page.evaluate(
      async ({ url, init: options }) => {
        try {
          const res = await fetch(url, { ...options, credentials: 'include' });
          return `${res.status} ${await res.text()}`;
        } catch {
          return 'blocked';
        }
      },
      { url: `http://api.example.test:${port}${path}`, init },
    );
  }

  it('lets a subdomain send a non-simple request after the preflight, and caches the preflight for Max-Age', async () => {
    const page = await pageAt('shop.example.test');
    const first = await fetchFrom(page, '/api/notes/7', {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'r1' },
    });
    expect(first).toBe('200 {"id":"7","saved":true}');
    const second = await fetchFrom(page, '/api/notes/7', {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'r2' },
    });
    expect(second).toBe(first);
    expect(seen).toEqual(['OPTIONS /api/notes/7 204', 'PUT /api/notes/7 200', 'PUT /api/notes/7 200']);
    await page.close();
  });

  it('never sends the real request after a preflight refused for the origin', async () => {
    const page = await pageAt('evil-example.test');
    expect(await fetchFrom(page, '/api/notes/7', { method: 'PUT', headers: { 'Content-Type': 'application/json' } })).toBe('blocked');
    expect(seen).toEqual(['OPTIONS /api/notes/7 403']);
    await page.close();
  });

  it('never sends the real request after a preflight refused for a header', async () => {
    const page = await pageAt('admin.example.test');
    expect(await fetchFrom(page, '/api/notes/8', { method: 'PUT', headers: { 'X-Secret': '1' } })).toBe('blocked');
    expect(seen).toEqual(['OPTIONS /api/notes/8 403']);
    await page.close();
  });

  it('lets a simple request from a disallowed origin run, but withholds the answer from the script', async () => {
    const page = await pageAt('evil-example.test');
    expect(await fetchFrom(page, '/api/notes', { method: 'GET' })).toBe('blocked');
    expect(seen).toEqual(['GET /api/notes 200']);
    await page.close();
  });
});
