// `npm run demo`: the whole demo in one process. Configuration comes from the environment (see demo-config.ts).
import { readFileSync } from 'node:fs';
import { readDemoEnvironment } from './demo-config';
import { DEMO_ACCOUNTS } from './demo-users';
import { startDemo } from './demo-server';

async function main(): Promise<void> {
  const env = readDemoEnvironment(process.env);
  const demo = await startDemo({
    port: env.port,
    host: env.host,
    domain: env.domain,
    secure: env.secure,
    ...(env.redisUrl ? { redisUrl: env.redisUrl } : {}),
    ...(env.publicPort !== undefined ? { publicPort: env.publicPort } : {}),
    ...(env.tls ? { tls: { cert: readFileSync(env.tls.certPath), key: readFileSync(env.tls.keyPath) } } : {}),
  });
  console.log('');
  console.log(`express-sso-kit demo on ${env.host}:${demo.port} (store: ${demo.store.kind})`);
  console.log('');
  console.log(`  Login portal      ${demo.url('auth', '/login')}`);
  console.log(`  Your sessions     ${demo.url('auth', '/sessions')}`);
  console.log(`  Shop              ${demo.url('shop')}`);
  console.log(`  Admin             ${demo.url('admin')}   (needs the admin role)`);
  console.log(`  Notes API         ${demo.url('api', '/notes')}`);
  console.log(`  Identity provider ${demo.url('idp', '/.well-known/openid-configuration')}`);
  console.log('');
  console.log('  Accounts:');
  for (const account of DEMO_ACCOUNTS) {
    console.log(`    ${account.username.padEnd(6)} / ${account.password.padEnd(15)} roles: ${account.roles.join(', ') || '(none)'}`);
  }
  console.log('');
  const stop = () => {
    demo.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
