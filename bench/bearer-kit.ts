import { requireBearer } from '../lib/tokens';
import type { BenchCase } from './harness';
import { protectedApp, tokenRequests, type BearerFixtures } from './bearer';

const subjectOf = (req: Express.Request): unknown => req.auth?.payload.sub;

/**
 * The kit's Bearer cases. `requireBearer` keeps a cache of verified tokens (1000 by default), so with the suite's
 * 100 rotating tokens most requests hit it; the `-uncached` cases (cacheSize: 0) show the cost of a full verify.
 *
 * @example
 * const cases = kitBearerCases();
 */
export function kitBearerCases(): BenchCase<BearerFixtures>[] {
  return [
    {
      name: 'kit-hs256',
      description: 'requireBearer({ secret, algorithms: [HS256], issuer, audience })',
      app: ({ secret, issuer, audience }) => ({
        app: protectedApp(requireBearer({ secret, algorithms: ['HS256'], issuer, audience }), subjectOf),
      }),
      requests: (_url, { hsTokens }) => tokenRequests(hsTokens),
    },
    {
      name: 'kit-rs256-jwks',
      description: 'requireBearer({ jwksUri, algorithms: [RS256], issuer, audience })',
      app: ({ jwksUri, issuer, audience }) => ({
        app: protectedApp(requireBearer({ jwksUri, algorithms: ['RS256'], issuer, audience }), subjectOf),
      }),
      requests: (_url, { rsTokens }) => tokenRequests(rsTokens),
    },
    {
      name: 'kit-rs256-jwks-uncached',
      description: 'the same with cacheSize: 0 (every request verifies the RS256 signature)',
      app: ({ jwksUri, issuer, audience }) => ({
        app: protectedApp(requireBearer({ jwksUri, algorithms: ['RS256'], issuer, audience, cacheSize: 0 }), subjectOf),
      }),
      requests: (_url, { rsTokens }) => tokenRequests(rsTokens),
    },
    {
      name: 'kit-hs256-uncached',
      description: 'the same with cacheSize: 0 (every request verifies the HMAC)',
      app: ({ secret, issuer, audience }) => ({
        app: protectedApp(requireBearer({ secret, algorithms: ['HS256'], issuer, audience, cacheSize: 0 }), subjectOf),
      }),
      requests: (_url, { hsTokens }) => tokenRequests(hsTokens),
    },
  ];
}
