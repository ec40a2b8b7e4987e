/**
 * Makes this process resolve the demo's domain (`<domain>` and `*.<domain>`) to the front door, as the browser
 * does for `*.localhost`, so one site calls another by its public URL through the front door, as it would in a real
 * deployment: the portal fetches the identity provider's discovery document and redeems codes there, and the QR
 * client redeems its code at the QR provider. Node does not resolve `*.localhost` by itself, and inside docker
 * compose the front door is the `proxy` service. Not needed where the domain is in real DNS.
 */
import dns from 'node:dns';
import { isIP } from 'node:net';

type LookupCallback = (error: NodeJS.ErrnoException | null, address?: string | dns.LookupAddress[], family?: number) => void;

/**
 * Routes lookups of `domain` and its subdomains to `frontDoorHost` (an address, or a name resolved as usual);
 * other names are untouched. Returns the undo.
 *
 * @example
 * const undo = resolveDemoDomain('sso.localhost', '127.0.0.1');
 */
export function resolveDemoDomain(domain: string, frontDoorHost: string): () => void {
  const suffix = `.${domain.toLowerCase()}`;
  const original = dns.lookup;
  const matches = (hostname: unknown) =>
    typeof hostname === 'string' && (hostname.toLowerCase() === domain.toLowerCase() || hostname.toLowerCase().endsWith(suffix));

  function demoLookup(hostname: string, options: unknown, callback?: unknown): void {
    if (!matches(hostname)) {
      (original as (...args: unknown[]) => void).call(dns, hostname, options, callback);
      return;
    }
    const done = (typeof options === 'function' ? options : callback) as LookupCallback;
    const opts = (typeof options === 'object' && options !== null ? options : {}) as dns.LookupOptions;
    const answer = (address: string, family: number) => {
      if (opts.all) process.nextTick(done, null, [{ address, family }]);
      else process.nextTick(done, null, address, family);
    };
    const family = isIP(frontDoorHost);
    if (family !== 0) {
      answer(frontDoorHost, family);
      return;
    }
    original(frontDoorHost, { family: 4 }, (error, address, resolvedFamily) => (error ? done(error) : answer(address, resolvedFamily)));
  }

  (dns as { lookup: unknown }).lookup = demoLookup;
  return () => {
    if (dns.lookup === (demoLookup as unknown)) (dns as { lookup: unknown }).lookup = original;
  };
}
