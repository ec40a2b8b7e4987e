// The directories moved to lib/accounts (their own feature folder); this path keeps the imports written against it
// working.
export {
  DEFAULT_DIRECTORY_SOURCE,
  normalizeUsername,
  type DirectoryUser,
  type UserDirectory,
  type UserRecord,
} from '../accounts/user-directory';
export { fileUserDirectory, type FileUserDirectoryOptions } from '../accounts/file-user-directory';
export { redisUserDirectory, memoryUserDirectory, type RedisUserDirectoryOptions } from '../accounts/kv-user-directory';
export type { ManagedUserDirectory, WritableUserDirectory } from '../accounts/writable-user-directory';
