/**
 * Starts a throw-away Redis Cluster, runs one command with SSO_TEST_REDIS_CLUSTER pointing at it, stops the
 * cluster and exits with the command's status. Used by scripts/test-cluster.sh.
 *
 *   npx tsx scripts/with-redis-cluster.ts -- npx jest test/session
 */
import { spawn } from 'node:child_process';
import { startRedisCluster } from '../test/helpers/redis-cluster';

async function main(): Promise<number> {
  const separator = process.argv.indexOf('--');
  const command = separator === -1 ? [] : process.argv.slice(separator + 1);
  if (command.length === 0) {
    console.error('usage: tsx scripts/with-redis-cluster.ts -- <command> [args…]');
    return 2;
  }
  const cluster = await startRedisCluster();
  console.error(`redis cluster ready: ${cluster.seeds}`);
  const stopOnSignal = (): void => {
    void cluster.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  try {
    return await new Promise<number>((resolve) => {
      const child = spawn(command[0]!, command.slice(1), {
        stdio: 'inherit',
        env: { ...process.env, SSO_TEST_REDIS_CLUSTER: cluster.seeds },
      });
      child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
      child.on('error', (error) => {
        console.error(error);
        resolve(1);
      });
    });
  } finally {
    await cluster.stop();
  }
}

main().then(
  (status) => process.exit(status),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
