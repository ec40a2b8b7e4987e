// The scrypt hasher lives in lib/util (lib/basic uses it too, and may not import the portal); this path keeps the
// imports written against it working.
export {
  hashPassword,
  verifyPasswordHash,
  parsePasswordHash,
  DEFAULT_SCRYPT_PARAMETERS,
  type ScryptParameters,
  type ParsedPasswordHash,
} from '../util/password-hash';
