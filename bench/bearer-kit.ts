import { requireBearer } from '../lib/tokens';
import type { BenchCase } from './harness';
import { protectedApp, startCase, type BearerFixtures } from './bearer';

const subjectOf = (req: Express.Request): unknown => req.auth?.claims.sub;

/**
 * The kit's Bearer cases. `requireBearer` keeps a cache of verified tokens (1000 by default), so with the suite's
 * 100 rotating tokens most requests hit it; the `-uncached` case (cacheSize: 0) shows the cost of a full verify.
 *
 * @example
 * const { cases } = await kitBearerCases(fixtures);
 */
export async function kitBearerCases(fixtures: BearerFixtures): Promise<{ cases: BenchCase[]; close(): Promise<void> }> {
  const { issuer, audience, jwksUri, secret, rsTokens, hsTokens } = fixtures;
  const cases: BenchCase[] = [
    {
      name: 'kit-hs256',
      description: 'requireBearer({ secret, algorithms: [HS256], issuer, audience })',
      start: () => startCase(protectedApp(requireBearer({ secret, algorithms: ['HS256'], issuer, audience }), subjectOf), hsTokens),
    },
    {
      name: 'kit-rs256-jwks',
      description: 'requireBearer({ jwksUri, algorithms: [RS256], issuer, audience })',
      start: () => startCase(protectedApp(requireBearer({ jwksUri, algorithms: ['RS256'], issuer, audience }), subjectOf), rsTokens),
    },
    {
      name: 'kit-rs256-jwks-uncached',
      description: 'the same with cacheSize: 0 (every request verifies the RS256 signature)',
      start: () =>
        startCase(protectedApp(requireBearer({ jwksUri, algorithms: ['RS256'], issuer, audience, cacheSize: 0 }), subjectOf), rsTokens),
    },
    {
      name: 'kit-hs256-uncached',
      description: 'the same with cacheSize: 0 (every request verifies the HMAC)',
      start: () => startCase(protectedApp(requireBearer({ secret, algorithms: ['HS256'], issuer, audience, cacheSize: 0 }), subjectOf), hsTokens),
    },
  ];
  return { cases, close: async () => undefined };
}
