import type { Adapter, AdapterPayload } from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { KeyValueStore } from '../store';

/** Builds the error oidc-provider answers a replayed code or refresh token with (`invalid_grant`). */
export type InvalidGrantFactory = (detail: string) => Error;

// Models whose records are single-use: consuming one twice is a replay, never a second success.
const SINGLE_USE = new Set([
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'PreAuthorizedCode',
  'PushedAuthorizationRequest',
]);
// Grant-bound models are listed under their grant, so a revoked grant takes all its tokens with it.
const GRANT_INDEX_TTL_FALLBACK_SECONDS = 14 * 24 * 3600;

function recordKey(model: string, id: string): string {
  return `op:${model}:{${id}}`;
}

function consumedKey(model: string, id: string): string {
  // Same hash tag as the record, so both live on one Redis Cluster node.
  return `op:${model}:{${id}}:consumed`;
}

function grantKey(grantId: string): string {
  return `op-grant:{${grantId}}`;
}

function uidKey(model: string, uid: string): string {
  return `op:${model}-uid:{${uid}}`;
}

function ttlOf(expiresIn: number | undefined): number | undefined {
  return expiresIn === undefined || !Number.isFinite(expiresIn) || expiresIn <= 0 ? undefined : Math.ceil(expiresIn);
}

/**
 * oidc-provider's storage on the kit's {@link KeyValueStore} (Redis, or memory for one process): every record
 * expires with its model's TTL; codes and refresh tokens are consumed atomically (SET NX), so of two concurrent
 * redemptions exactly one succeeds and the other is answered as a replay; tokens are indexed by grant so that
 * revoking a grant (replayed code, refresh token reuse, logout) removes all of them.
 *
 * @example
 * const adapterFor = storeAdapter(store, (detail) => new errors.InvalidGrant(detail));
 * new Provider(issuer, { adapter: adapterFor });
 */
export function storeAdapter(store: KeyValueStore, invalidGrant: InvalidGrantFactory): (model: string) => Adapter {
  return (model: string): Adapter => ({
    async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      const ttl = ttlOf(expiresIn);
      await store.set(recordKey(model, id), JSON.stringify(payload), ttl);
      const writes: Promise<unknown>[] = [];
      if (typeof payload.grantId === 'string') {
        writes.push(store.addToSet(grantKey(payload.grantId), [`${model}:${id}`], ttl ?? GRANT_INDEX_TTL_FALLBACK_SECONDS));
      }
      if (typeof payload.uid === 'string') writes.push(store.set(uidKey(model, payload.uid), id, ttl));
      await Promise.all(writes);
    },

    async find(id: string): Promise<AdapterPayload | undefined> {
      const [text, consumed] = await Promise.all([
        store.get(recordKey(model, id)),
        SINGLE_USE.has(model) ? store.get(consumedKey(model, id)) : Promise.resolve(null),
      ]);
      if (text === null) return undefined;
      const payload = JSON.parse(text) as AdapterPayload;
      return consumed === null ? payload : { ...payload, consumed: Number(consumed) };
    },

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      const id = await store.get(uidKey(model, uid));
      return id === null ? undefined : ((await this.find(id)) ?? undefined);
    },

    async findByUserCode(): Promise<undefined> {
      // The device flow is not enabled, so no record has a user code.
      return undefined;
    },

    async consume(id: string): Promise<void> {
      const remaining = await store.ttlMillis(recordKey(model, id));
      const ttl = remaining > 0 ? Math.ceil(remaining / 1000) : undefined;
      const first = await store.setIfAbsent(consumedKey(model, id), String(Math.floor(Date.now() / 1000)), ttl);
      // A concurrent redemption won the race: this one is a replay, answered like one.
      if (!first) throw invalidGrant(`${model === 'RefreshToken' ? 'refresh token' : 'grant'} already used`);
    },

    async destroy(id: string): Promise<void> {
      await store.delete(recordKey(model, id), consumedKey(model, id));
    },

    async revokeByGrantId(grantId: string): Promise<void> {
      const members = await store.members(grantKey(grantId));
      const mine = members.filter((member) => member.startsWith(`${model}:`)).map((member) => member.slice(model.length + 1));
      if (mine.length === 0) return;
      await Promise.all(mine.map((id) => store.delete(recordKey(model, id), consumedKey(model, id))));
      await store.removeFromSet(
        grantKey(grantId),
        mine.map((id) => `${model}:${id}`),
      );
    },
  });
}
