import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import express from 'express';
import { metricsHandler, MemoryStore, securityEvents, ssoSession, type SecurityEvents } from '../../lib';
import { freePort } from '../helpers/redis';
import { loginAs, ssoOptions, startSsoApp } from '../helpers/sso-apps';

/** The prometheus binary on PATH (or where the Debian package puts it), or undefined. */
function prometheusBinary(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/bin', '/usr/local/bin'];
  return dirs.map((dir) => path.join(dir, 'prometheus')).find((candidate) => existsSync(candidate));
}

const binary = prometheusBinary();
const scrapes = binary ? it : it.skip;
const title = binary
  ? 'a real Prometheus scrapes metricsHandler and answers a counter query through its HTTP API'
  : 'SKIPPED: the prometheus binary is missing (apt-get install -y prometheus; .ci/run installs it)';

async function query(port: number, promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await res.json()) as {
    status: string;
    data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
  };
  return body.status === 'success' ? body.data.result : [];
}

/** Polls until `check` holds (Prometheus scrapes on its own schedule), for at most `ms`. */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  // Prometheus refuses connections until it listens: an error is "not yet".
  let value = await read().catch(() => undefined);
  while ((value === undefined || !check(value)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    value = await read().catch(() => value);
  }
  return value;
}

describe('metrics through Prometheus', () => {
  let events: SecurityEvents;
  let store: MemoryStore;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;
  let metricsServer: Server;
  let prometheus: ChildProcess | undefined;
  let dataDir: string | undefined;

  beforeAll(async () => {
    events = securityEvents({ sinks: [() => undefined] });
    store = new MemoryStore();
    shop = await startSsoApp(ssoSession(ssoOptions({ store, events })));
    const internal = express();
    internal.get('/metrics', metricsHandler({ events }));
    metricsServer = internal.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => metricsServer.once('listening', () => resolve()));
  });
  afterAll(async () => {
    prometheus?.kill('SIGTERM');
    if (prometheus && prometheus.exitCode === null) await new Promise((resolve) => prometheus!.once('exit', resolve));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
    await shop.close();
    await store.close();
  });

  it('serves the text exposition format with bounded labels (no user, network or path)', async () => {
    await loginAs(shop.server, 'shop.example.test', { id: 'ada' });
    const res = await fetch(`http://127.0.0.1:${(metricsServer.address() as AddressInfo).port}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const text = await res.text();
    expect(text).toContain('sso_security_events_total{type="session.created",outcome="success",reason="login"} 1');
    expect(text).not.toMatch(/ada|127\.0\.0\.1|shop\.example\.test/);
  });

  scrapes(
    title,
    async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'sso-prometheus-'));
      const port = await freePort();
      const target = `127.0.0.1:${(metricsServer.address() as AddressInfo).port}`;
      await writeFile(
        path.join(dataDir, 'prometheus.yml'),
        `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: sso\n    static_configs:\n      - targets: ['${target}']\n`,
      );
      prometheus = spawn(
        binary!,
        [
          `--config.file=${path.join(dataDir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${path.join(dataDir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
        ],
        { stdio: 'ignore' },
      );
      await loginAs(shop.server, 'shop.example.test', { id: 'bob' });
      const promql = 'sso_security_events_total{job="sso",type="session.created",outcome="success"}';
      const result = await eventually(
        () => query(port, promql),
        (found) => Number(found[0]?.value[1]) >= 2,
        30_000,
      );
      expect(result).toEqual([
        {
          metric: expect.objectContaining({ __name__: 'sso_security_events_total', type: 'session.created', reason: 'login', job: 'sso' }),
          value: [expect.any(Number), '2'],
        },
      ]);
    },
    60_000,
  );
});
