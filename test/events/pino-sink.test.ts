import { spawn } from 'node:child_process';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { pinoSink, securityEvents } from '../../lib';

const FIXTURE = path.join(__dirname, 'fixtures', 'stderr-events.ts');

/** Runs the fixture with Node and tsx; `readStderr: false` leaves its stderr pipe unread until stdout answered. */
function runFixture(args: string[], readStderr = true): Promise<{ stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const collect = () => child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  if (readStderr) collect();
  else child.stdout.once('data', collect);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', () => resolve({ stdout, stderr }));
  });
}

describe('pinoSink', () => {
  it('writes one JSON line per event to stderr by default, in the shape pino tools read', async () => {
    const { stderr } = await runFixture(['1']);
    const lines = stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      {
        level: 40,
        pid: expect.any(Number),
        hostname: expect.any(String),
        time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        type: 'signin.failed',
        outcome: 'failure',
        reason: 'bad_credentials',
        app: 'shop',
        method: 'password',
        usernameHash: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
        msg: 'signin.failed bad_credentials',
      },
      expect.objectContaining({ level: 30, type: 'session.created', msg: 'session.created login', userId: 'directory:local|alice' }),
    ]);
  }, 30_000);

  it('drops (and counts) what a stalled stderr reader cannot take, without holding the process', async () => {
    const { stdout, stderr } = await runFixture(['20000', '65536'], false);
    const [status] = JSON.parse(stdout.trim()) as Array<{ name: string; dropped: { overflow: number } }>;
    expect(status!.name).toBe('stderr');
    expect(status!.dropped.overflow).toBeGreaterThan(0);
    // The loss is said (on stderr too, where an operator looks), never silent.
    const lines = stderr.split('\n').slice(0, -1);
    expect(lines.filter((line) => line.includes('securityEvents: sink "stderr": its queue is full'))).toHaveLength(1);
    // Every event line is written whole or dropped whole and counted (the process may end inside the last one).
    const written = lines.filter((line) => line.startsWith('{'));
    for (const line of written) expect(() => JSON.parse(line)).not.toThrow();
    expect(written.length + status!.dropped.overflow).toBeLessThanOrEqual(40_000);
  }, 60_000);

  it('writes to a stream when given one (a file, a transport), with its name', async () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const events = securityEvents({ sinks: [pinoSink({ destination: out, name: 'shop', sinkName: 'file' })] });
    events.emit('store.unavailable', { reason: 'store_unavailable', status: 503 });
    await events.close();
    expect(JSON.parse(text)).toMatchObject({
      level: 50,
      name: 'shop',
      type: 'store.unavailable',
      msg: 'store.unavailable store_unavailable',
    });
    expect(events.status()[0]!.name).toBe('file');
  });
});
