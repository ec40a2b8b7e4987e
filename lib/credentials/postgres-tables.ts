/**
 * The qualified table names and the statements that create them in `schema` (an identifier checked by the caller).
 *
 * @example
 * const tables = credentialTables('sso_credentials'); // tables.totp === '"sso_credentials".totp'
 */
export function credentialTables(schema: string) {
  const passkeys = `"${schema}".passkeys`;
  const totp = `"${schema}".totp`;
  const totpSteps = `"${schema}".totp_steps`;
  const recoveryCodes = `"${schema}".recovery_codes`;
  return {
    schema,
    passkeys,
    totp,
    totpSteps,
    recoveryCodes,
    create: [
      `CREATE SCHEMA IF NOT EXISTS "${schema}"`,
      `CREATE TABLE IF NOT EXISTS ${passkeys} (
         credential_id text PRIMARY KEY,
         user_id text NOT NULL,
         public_key text NOT NULL,
         counter bigint NOT NULL,
         transports text[] NOT NULL,
         device_type text NOT NULL,
         backed_up boolean NOT NULL,
         name text NOT NULL,
         created_at bigint NOT NULL,
         last_used_at bigint
       )`,
      `CREATE INDEX IF NOT EXISTS passkeys_user_id ON ${passkeys} (user_id)`,
      `CREATE TABLE IF NOT EXISTS ${totp} (user_id text PRIMARY KEY, sealed_secret text NOT NULL, created_at bigint NOT NULL)`,
      // Kept apart from the enrolment so the replay rule holds even while an enrolment is being replaced.
      `CREATE TABLE IF NOT EXISTS ${totpSteps} (user_id text PRIMARY KEY, last_step bigint NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${recoveryCodes} (
         user_id text NOT NULL,
         code_hash text NOT NULL,
         used_at bigint,
         PRIMARY KEY (user_id, code_hash)
       )`,
    ],
  };
}
