import dns from 'node:dns';

type LookupCallback = (error: NodeJS.ErrnoException | null, address?: string | dns.LookupAddress[], family?: number) => void;

const domains = new Map<string, number>();
let original: typeof dns.lookup | undefined;

function matches(hostname: string): boolean {
  const name = hostname.toLowerCase();
  for (const domain of domains.keys()) if (name === domain || name.endsWith(`.${domain}`)) return true;
  return false;
}

function loopbackLookup(hostname: string, options: unknown, callback?: unknown): void {
  const done = (typeof options === 'function' ? options : callback) as LookupCallback;
  const opts = (typeof options === 'object' && options !== null ? options : {}) as dns.LookupOptions;
  if (typeof hostname === 'string' && matches(hostname)) {
    if (opts.all) process.nextTick(done, null, [{ address: '127.0.0.1', family: 4 }]);
    else process.nextTick(done, null, '127.0.0.1', 4);
    return;
  }
  (original as (...args: unknown[]) => void).call(dns, hostname, options, callback);
}

/**
 * Makes this process resolve `<domain>` and every `*.<domain>` to 127.0.0.1, as browsers do for `*.localhost`.
 * The demo runs every site in one process, and its relying parties call its identity provider by its public name
 * (the issuer URL must match); without this, `idp.sso.localhost` would not resolve inside Node. Returns the undo.
 *
 * @example
 * const undo = resolveToLoopback('sso.localhost');
 */
export function resolveToLoopback(domain: string): () => void {
  const key = domain.toLowerCase();
  domains.set(key, (domains.get(key) ?? 0) + 1);
  if (!original) {
    original = dns.lookup;
    (dns as { lookup: unknown }).lookup = loopbackLookup;
  }
  let undone = false;
  return () => {
    if (undone) return;
    undone = true;
    const count = (domains.get(key) ?? 1) - 1;
    if (count <= 0) domains.delete(key);
    else domains.set(key, count);
    if (domains.size === 0 && original) {
      (dns as { lookup: unknown }).lookup = original;
      original = undefined;
    }
  };
}
