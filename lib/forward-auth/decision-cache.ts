import type { AccessDecision } from '../access/access-decision';

/**
 * The rule decisions of recent sub-requests, by host, method, path and roles, least recently used first out. It holds
 * what the rules say, never whether a session is live or strong enough: those are read for every sub-request (through
 * the session cache of `ssoSession`, which Redis keeps coherent), so a revoked session is refused at the next one.
 *
 * @example
 * const cache = new DecisionCache(10_000);
 */
export class DecisionCache {
  private readonly entries = new Map<string, AccessDecision>();

  constructor(private readonly maxEntries: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): AccessDecision | undefined {
    const decision = this.entries.get(key);
    if (decision !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, decision);
    }
    return decision;
  }

  set(key: string, decision: AccessDecision): void {
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, decision);
  }
}
