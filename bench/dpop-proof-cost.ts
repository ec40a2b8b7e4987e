/**
 * What checking one DPoP proof costs, in one process, against its floor: one ES256 signature verification. Prints
 * CPU microseconds per proof (user + system of this process ÷ proofs) for:
 *
 * - the floor: `crypto.verify` of the proof's signature with a key imported once;
 * - the floor with the JWK imported for every proof (what a verifier without a key cache pays);
 * - `DpopVerifier.verify` with a `MemoryStore` replay store, 16 proofs in flight: every check of RFC 9449 §4.3, no
 *   network (its signature check runs on libuv's thread pool, so the wall time per proof can be below the CPU time
 *   on a machine with more than one core);
 * - `DpopVerifier.verify` with a `RedisStore` on Redis, 16 proofs in flight: the Node side of the SET NX, and Redis's
 *   own CPU per proof (INFO cpu and commandstats before and after); one at a time, the wall time per proof (one round
 *   trip).
 *
 * Usage: npx tsx bench/dpop-proof-cost.ts [proofs per row, default 20000]. BENCH_REDIS_URL overrides
 * redis://127.0.0.1:6379; keys go under a random prefix and expire within 70 s.
 */
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, verify } from 'node:crypto';
import Redis from 'ioredis';
import { MemoryStore, RedisStore, type KeyValueStore } from '../lib/store';
import { DpopVerifier } from '../lib/tokens';
import { proofSigner } from './dpop-signer';

const count = Number(process.argv[2] ?? 20_000);
if (!Number.isInteger(count) || count < 100) {
  console.error(`dpop-proof-cost: the number of proofs must be a whole number of at least 100, got ${JSON.stringify(process.argv[2])}`);
  process.exit(2);
}
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const uri = 'https://api.example.test/orders';
const accessToken = `${randomBytes(300).toString('base64url')}.${randomBytes(200).toString('base64url')}.${randomBytes(64).toString('base64url')}`;
const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const privateJwk = pair.privateKey.export({ format: 'jwk' }) as Record<string, string>;
const sign = proofSigner({ privateJwk, htm: 'GET', htu: uri, ath: createHash('sha256').update(accessToken).digest('base64url') });

function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** Proofs signed ahead (signing is the client's cost, not the server's), each with its own jti. */
const proofs = (): string[] => Array.from({ length: count }, () => sign());

function perProof(run: () => void): number {
  const before = cpuMicros();
  run();
  return (cpuMicros() - before) / count;
}

async function perProofAsync(run: () => Promise<void>): Promise<{ cpu: number; wall: number }> {
  const before = cpuMicros();
  const started = performance.now();
  await run();
  return { cpu: (cpuMicros() - before) / count, wall: ((performance.now() - started) * 1000) / count };
}

function floor(importEachTime: boolean): number {
  const batch = proofs();
  const key = pair.publicKey;
  return perProof(() => {
    for (const proof of batch) {
      const dot = proof.lastIndexOf('.');
      const header = JSON.parse(Buffer.from(proof.slice(0, proof.indexOf('.')), 'base64url').toString()) as { jwk: object };
      const verifyKey = importEachTime ? createPublicKey({ key: header.jwk as never, format: 'jwk' }) : key;
      if (
        !verify(
          'sha256',
          Buffer.from(proof.slice(0, dot)),
          { key: verifyKey, dsaEncoding: 'ieee-p1363' },
          Buffer.from(proof.slice(dot + 1), 'base64url'),
        )
      ) {
        throw new Error('dpop-proof-cost: a proof did not verify');
      }
    }
  });
}

async function verifier(store: KeyValueStore, inFlight: number): Promise<{ cpu: number; wall: number }> {
  const dpop = new DpopVerifier({ replayStore: store });
  const batch = proofs();
  // One warm-up proof: the key cache and the connection are ready before the clock starts.
  await dpop.verify(sign(), { method: 'GET', uri, accessToken });
  let next = 0;
  return perProofAsync(async () => {
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < batch.length) await dpop.verify(batch[next++]!, { method: 'GET', uri, accessToken });
      }),
    );
  });
}

/** Redis's own CPU (INFO cpu, user + sys) and SET calls and time (INFO commandstats) now. */
async function redisCounters(client: Redis): Promise<{ cpuMicros: number; setCalls: number; setMicros: number }> {
  const cpu = await client.info('cpu');
  const stats = await client.info('commandstats');
  const field = (text: string, name: string) => Number(new RegExp(`${name}:([0-9.]+)`).exec(text)?.[1] ?? 0);
  const set = /cmdstat_set:calls=(\d+),usec=(\d+)/.exec(stats);
  return {
    cpuMicros: (field(cpu, 'used_cpu_user') + field(cpu, 'used_cpu_sys')) * 1e6,
    setCalls: Number(set?.[1] ?? 0),
    setMicros: Number(set?.[2] ?? 0),
  };
}

async function main(): Promise<void> {
  const round = (value: number) => value.toFixed(1);
  console.log(`DPoP proof check, ${count.toLocaleString('en-US')} ES256 proofs per row, Node ${process.version}`);
  floor(false); // JIT warm-up
  console.log(`  floor: one ES256 signature verification            ${round(floor(false))} µs CPU per proof`);
  console.log(`  the same, importing the proof's JWK each time       ${round(floor(true))} µs CPU per proof`);
  const memory = new MemoryStore();
  await verifier(memory, 16);
  const inMemory = await verifier(memory, 16);
  console.log(
    `  DpopVerifier.verify, MemoryStore, 16 in flight      ${round(inMemory.cpu)} µs CPU, ${round(inMemory.wall)} µs wall per proof`,
  );
  await memory.close();

  const prefix = `ssobench:dpop-cost:${randomBytes(4).toString('hex')}:`;
  const store = new RedisStore(redisUrl, { prefix });
  const probe = new Redis(redisUrl);
  try {
    await verifier(store, 16);
    const before = await redisCounters(probe);
    const concurrent = await verifier(store, 16);
    const after = await redisCounters(probe);
    const sets = after.setCalls - before.setCalls;
    console.log(
      `  DpopVerifier.verify, RedisStore, 16 in flight       ${round(concurrent.cpu)} µs CPU, ${round(concurrent.wall)} µs wall per proof in Node`,
    );
    console.log(
      `    Redis: ${sets.toLocaleString('en-US')} SET NX, ${round((after.setMicros - before.setMicros) / Math.max(1, sets))} µs each inside Redis (commandstats), ${round((after.cpuMicros - before.cpuMicros) / count)} µs of Redis CPU per proof with its network I/O (INFO cpu; other clients of this Redis count too)`,
    );
    const sequential = await verifier(store, 1);
    console.log(
      `  DpopVerifier.verify, RedisStore, one at a time      ${round(sequential.cpu)} µs CPU, ${round(sequential.wall)} µs wall per proof (a round trip each)`,
    );
  } finally {
    await store.close();
    await probe.quit();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
