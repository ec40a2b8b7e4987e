/**
 * Parses a JWT segment's JSON as an object and refuses repeated member names at any depth. `JSON.parse` keeps the
 * last duplicate silently, so `{"sub":"alice","sub":"admin"}` would read differently here than in another parser
 * (RFC 7515 §5.2 lets us reject it, RFC 8725 asks us to).
 */
export function parseJsonObject(text: string): { value: Record<string, unknown> } | { error: 'malformed' | 'duplicate_member' } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: 'malformed' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: 'malformed' };
  if (hasDuplicateMembers(text)) return { error: 'duplicate_member' };
  return { value: value as Record<string, unknown> };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

/** Scans text that `JSON.parse` already accepted, so it only has to track where member names stand. */
export function hasDuplicateMembers(json: string): boolean {
  const stack: (Set<string> | null)[] = [];
  let expectName = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === QUOTE) {
      let end = i + 1;
      let escaped = false;
      while (json.charCodeAt(end) !== QUOTE) {
        if (json.charCodeAt(end) === BACKSLASH) {
          escaped = true;
          end++;
        }
        end++;
      }
      const names = stack[stack.length - 1];
      if (names && expectName) {
        // Escapes are decoded, so "s\u0075b" counts as a second "sub".
        const name = escaped ? (JSON.parse(json.slice(i, end + 1)) as string) : json.slice(i + 1, end);
        if (names.has(name)) return true;
        names.add(name);
        expectName = false;
      }
      i = end;
    } else if (c === OPEN_BRACE) {
      stack.push(new Set());
      expectName = true;
    } else if (c === OPEN_BRACKET) {
      stack.push(null);
      expectName = false;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      stack.pop();
      expectName = false;
    } else if (c === COMMA) {
      expectName = stack[stack.length - 1] instanceof Set;
    }
  }
  return false;
}
