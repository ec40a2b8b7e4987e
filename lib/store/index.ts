export type { KeyValueStore } from './port';
export { StoreUnavailableError, StoreWrongTypeError } from './port';
export { MemoryStore, type MemoryStoreOptions } from './memory-store';
export { RedisStore, isStoreOutage, type RedisStoreOptions, type ReplicaWait } from './redis-store';
export { createRedisConnection, isCluster, type RedisClient, type RedisConnectionOptions } from './redis-connection';
export { hashSlot } from './hash-slot';
