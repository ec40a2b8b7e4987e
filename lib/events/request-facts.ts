import { randomUUID } from 'node:crypto';
import Bowser from 'bowser';
import type { Request } from 'express';
import { clientNetwork, DEFAULT_IPV6_PREFIX_LENGTH } from '../portal/throttle/client-network';
import { requestHost, trustsPeer } from '../util/request-origin';

/** What a request tells about itself in an event: none of it is a credential. */
export interface RequestFacts {
  requestId: string;
  host: string | undefined;
  network: string | undefined;
  userAgent: string | undefined;
  userId: string | undefined;
  sessionHandle: string | undefined;
}

// What a trusted proxy may call a request: the ids of nginx ($request_id), Envoy and AWS load balancers fit.
const FORWARDED_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
const ids = new WeakMap<Request, string>();

/**
 * The id of a request: the `X-Request-Id` a trusted proxy set (only when `trust proxy` trusts the peer, as for
 * `X-Forwarded-For`; a client cannot choose the id its events carry), else a random UUID made on first use. The
 * same for every event of the request and for its problem+json body; it is also sent back as `X-Request-Id`.
 *
 * @example
 * app.use((err, req, res, next) => { console.error(requestIdOf(req), err); next(err); });
 */
export function requestIdOf(req: Request): string {
  let id = ids.get(req);
  if (id === undefined) {
    const forwarded = trustsPeer(req) ? req.headers['x-request-id'] : undefined;
    id = typeof forwarded === 'string' && FORWARDED_ID.test(forwarded) ? forwarded : randomUUID();
    ids.set(req, id);
    const res = req.res;
    if (res !== undefined && !res.headersSent) res.setHeader('X-Request-Id', id);
  }
  return id;
}

/**
 * A client network as events record it: an IPv4 address as `/32`, an IPv6 address by its first `ipv6PrefixLength`
 * bits (the /64 its owner can fill at will), anything unreadable as a hash.
 *
 * @example
 * networkOf('2001:db8:1:2:a:b:c:d'); // '2001:db8:1:2:0:0:0:0/64'
 */
export function networkOf(address: string, ipv6PrefixLength = DEFAULT_IPV6_PREFIX_LENGTH): string {
  const network = clientNetwork(address, ipv6PrefixLength);
  if (network.startsWith('ipv4:')) return `${network.slice(5)}/32`;
  if (network.startsWith('ipv6:')) return network.slice(5);
  return network;
}

const MAX_REMEMBERED_AGENTS = 512;
const agents = new Map<string, string>();

/**
 * A short summary of a `User-Agent` (browser, major version, system: `Chrome 131 on Linux`), `unknown` for one
 * that names none; the raw header is never recorded. Summaries are remembered (a flood repeats its agents).
 *
 * @example
 * summarizeUserAgent('Mozilla/5.0 (X11; Linux x86_64) … Chrome/131.0.0.0 Safari/537.36'); // 'Chrome 131 on Linux'
 */
export function summarizeUserAgent(userAgent: string): string {
  const known = agents.get(userAgent);
  if (known !== undefined) return known;
  const parsed = userAgent.trim() === '' ? undefined : Bowser.parse(userAgent.slice(0, 512));
  const browser = parsed?.browser.name
    ? `${parsed.browser.name}${parsed.browser.version ? ` ${parsed.browser.version.split('.')[0]}` : ''}`
    : '';
  const system = parsed?.os.name ?? '';
  const summary = browser && system ? `${browser} on ${system}` : browser || system || 'unknown';
  if (agents.size >= MAX_REMEMBERED_AGENTS) agents.delete(agents.keys().next().value as string);
  agents.set(userAgent, summary);
  return summary;
}

interface SessionSide {
  sessionID?: string;
  session?: { user?: { id?: string } };
  sso?: { manager?: { handleOf?(sessionId: string): string } };
}

/**
 * The facts of a request its events carry, read when an event is emitted (never on a request that emits none).
 *
 * @example
 * const { requestId, network } = requestFacts(req, 64);
 */
export function requestFacts(req: Request, ipv6PrefixLength: number): RequestFacts {
  const side = req as unknown as SessionSide;
  const address = req.ip ?? req.socket?.remoteAddress;
  const userAgent = req.headers['user-agent'];
  const signedIn = side.session?.user?.id !== undefined && side.sessionID !== undefined;
  const handleOf = side.sso?.manager?.handleOf;
  return {
    requestId: requestIdOf(req),
    host: requestHost(req),
    network: address === undefined ? undefined : networkOf(address, ipv6PrefixLength),
    userAgent: typeof userAgent === 'string' ? summarizeUserAgent(userAgent) : undefined,
    userId: req.user?.id ?? side.session?.user?.id,
    sessionHandle: signedIn && handleOf ? handleOf.call(side.sso!.manager, side.sessionID!) : undefined,
  };
}
