/** What {@link readCookie} returns when the cookie appears more than once with different values. */
export const AMBIGUOUS_COOKIE: unique symbol = Symbol('express-sso-kit.ambiguousCookie');

function isBlank(code: number): boolean {
  return code === 32 /* space */ || code === 9; /* tab */
}

function unquote(raw: string): string {
  // Quoted values (RFC 6265 §4.1.1 cookie-value) are read without their quotes.
  return raw.length >= 2 && raw.charCodeAt(0) === 34 && raw.charCodeAt(raw.length - 1) === 34 ? raw.slice(1, -1) : raw;
}

/**
 * A cookie value percent-decoded where it is valid percent-encoding, and kept as sent where it is not (as the
 * `cookie` package decodes).
 *
 * @example
 * decodeCookieValue('s%3Aabc.sig'); // 's:abc.sig'
 */
export function decodeCookieValue(value: string): string {
  if (value.indexOf('%') === -1) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/**
 * The value of cookie `name` in a `Cookie` header as sent (unquoted, not yet percent-decoded), read as browsers
 * send it and as the `cookie` package parses it (RFC 6265 §5.4/§4.2): `;`-separated pairs, the name is the text
 * before the pair's first `=` with spaces and tabs trimmed, the value is trimmed and unquoted. `xsso.sid=…` or a
 * value holding `sso.sid=` never match. When the name appears twice with values that differ (after decoding) —
 * cookie tossing: a sibling subdomain set a second cookie of this name for a narrower host or path, which the
 * browser sends first — the answer is {@link AMBIGUOUS_COOKIE}: neither can be trusted to be the one this site
 * set. The same value twice is just that value.
 *
 * The hot path of every request: a header without the name costs one `indexOf` and allocates nothing; otherwise
 * only the matching values are sliced, and nothing is decoded unless two of them differ (the session engine
 * decodes only a value it has not verified before).
 *
 * @example
 * readRawCookie('a=1; sso.sid=s%3Aabc.sig', 'sso.sid'); // 's%3Aabc.sig'
 * readRawCookie('sso.sid=one; sso.sid=two', 'sso.sid'); // AMBIGUOUS_COOKIE
 */
export function readRawCookie(header: string | undefined, name: string): string | undefined | typeof AMBIGUOUS_COOKIE {
  if (header === undefined) return undefined;
  let found: string | undefined;
  let at = header.indexOf(name);
  while (at !== -1) {
    const next = header.indexOf(name, at + 1);
    // The name must start its pair: only blanks between the previous ";" (or the start) and the name.
    let before = at - 1;
    while (before >= 0 && isBlank(header.charCodeAt(before))) before -= 1;
    if (before < 0 || header.charCodeAt(before) === 59 /* ; */) {
      // …and end at the pair's first "=", after optional blanks.
      let after = at + name.length;
      while (after < header.length && isBlank(header.charCodeAt(after))) after += 1;
      if (after < header.length && header.charCodeAt(after) === 61 /* = */) {
        const semicolon = header.indexOf(';', after + 1);
        let start = after + 1;
        let stop = semicolon === -1 ? header.length : semicolon;
        while (start < stop && isBlank(header.charCodeAt(start))) start += 1;
        while (stop > start && isBlank(header.charCodeAt(stop - 1))) stop -= 1;
        const value = unquote(header.slice(start, stop));
        if (found === undefined) found = value;
        else if (found !== value && decodeCookieValue(found) !== decodeCookieValue(value)) return AMBIGUOUS_COOKIE;
      }
    }
    at = next;
  }
  return found;
}

/**
 * The decoded value of cookie `name` (see {@link readRawCookie} for how the header is read), undefined when absent,
 * {@link AMBIGUOUS_COOKIE} when sent twice with different values.
 *
 * @example
 * readCookie('a=1; sso.sid=s%3Aabc.sig', 'sso.sid'); // 's:abc.sig'
 */
export function readCookie(header: string | undefined, name: string): string | undefined | typeof AMBIGUOUS_COOKIE {
  const raw = readRawCookie(header, name);
  return raw === undefined || raw === AMBIGUOUS_COOKIE ? raw : decodeCookieValue(raw);
}
