/**
 * How many socket writes the QR provider's store makes per complete login, with the provider and its client in this
 * one process (so the count is exact and does not depend on the machine's speed), and the process's CPU time per
 * login (client and provider together, so only its ratio between two versions means anything). `RedisStore` sends
 * the commands of one event-loop turn in one socket write; at 1 login in flight there is nothing to share a write with.
 *
 *   npx tsx bench/qr-store-writes.ts [logins in flight, default 16] [redis URL, default redis://127.0.0.1:6379]
 */
import net, { type AddressInfo } from 'node:net';
import { deleteQrKeys, qrFixtures, qrProviderApp, runQrClient } from './qr-login';

const WARM_UP_LOGINS = 100;
const MEASURED_LOGINS = 1000;

async function main(): Promise<void> {
  const concurrency = Number(process.argv[2] ?? 16);
  const redisUrl = process.argv[3] ?? 'redis://127.0.0.1:6379';
  const redisPort = Number(new URL(redisUrl).port || 6379);
  // A socket's `_write` or `_writev` hands the operating system one write, however many `write` calls (one per
  // command, while the store has the socket corked) it carries.
  let writes = 0;
  const socket = net.Socket.prototype as unknown as Record<'_write' | '_writev', (...values: unknown[]) => unknown>;
  for (const name of ['_write', '_writev'] as const) {
    const original = socket[name];
    socket[name] = function countingWrite(this: net.Socket, ...args: unknown[]) {
      if (this.remotePort === redisPort) writes += 1;
      return original.apply(this, args);
    };
  }

  const fixtures = qrFixtures(redisUrl);
  const { app, close } = qrProviderApp(fixtures);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    await runQrClient(base, fixtures, { concurrency, logins: WARM_UP_LOGINS });
    writes = 0;
    const cpuBefore = process.cpuUsage();
    const result = await runQrClient(base, fixtures, { concurrency, logins: MEASURED_LOGINS });
    const cpu = process.cpuUsage(cpuBefore);
    console.log(
      `${concurrency} in flight: ${(writes / result.logins).toFixed(2)} Redis socket writes per login, ` +
        `${((cpu.user + cpu.system) / 1000 / result.logins).toFixed(2)} ms CPU per login (client and provider), ` +
        `${result.logins} logins, ${result.failures} failed`,
    );
  } finally {
    server.close();
    await deleteQrKeys(fixtures);
    await close?.();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
