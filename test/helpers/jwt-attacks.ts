import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import type { TokenErrorReason } from '../../lib/tokens';
import { b64url, ecPair, loadJose, nowSeconds, rsaPair, signRaw } from './jose-tokens';

/** The identity the attack corpus targets: an RS256 key with kid `rs-1`, and the claims a valid token carries. */
export interface AttackTarget {
  privateKey: KeyObject;
  publicKey: KeyObject;
  kid: string;
  issuer: string;
  audience: string;
  /** A server run by the "attacker"; tokens point jku/x5u at it, and it must never be contacted. */
  attackerUrl: string;
}

export interface Attack {
  name: string;
  token: string;
  /** The reasons verifyJwt may give; any of them is a correct refusal. */
  reasons: TokenErrorReason[];
}

export function createAttackTarget(attackerUrl: string): AttackTarget {
  const { privateKey, publicKey } = rsaPair();
  return { privateKey, publicKey, kid: 'rs-1', issuer: 'https://auth.example.test', audience: 'shop-api', attackerUrl };
}

export function validClaims(target: AttackTarget, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const now = nowSeconds();
  return { iss: target.issuer, aud: target.audience, sub: 'alice', iat: now, exp: now + 600, scope: 'orders:read', ...extra };
}

/** A token the target accepts (RS256, typ at+jwt), minted by jose. */
export async function mintValid(
  target: AttackTarget,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const jose = await loadJose();
  return new jose.SignJWT(validClaims(target, claims))
    .setProtectedHeader({ alg: 'RS256', kid: target.kid, typ: 'at+jwt', ...header } as never)
    .sign(target.privateKey);
}

function withoutClaim(claims: Record<string, unknown>, name: string): Record<string, unknown> {
  const copy = { ...claims };
  delete copy[name];
  return copy;
}

/** The table of hostile tokens: every one must be refused (401), never accepted and never a 5xx. */
export async function buildAttackCorpus(target: AttackTarget): Promise<Attack[]> {
  const jose = await loadJose();
  const now = nowSeconds();
  const claims = validClaims(target);
  const valid = await mintValid(target);
  const [h, p, s] = valid.split('.') as [string, string, string];
  const attacker = rsaPair();
  const attackerJwk = attacker.publicKey.export({ format: 'jwk' });
  const sign = (payload: Record<string, unknown>, header: Record<string, unknown>, key: KeyObject | Uint8Array = target.privateKey) =>
    new jose.SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: target.kid, typ: 'at+jwt', ...header } as never).sign(key);
  const rawPayload = (text: string) =>
    new jose.CompactSign(new TextEncoder().encode(text))
      .setProtectedHeader({ alg: 'RS256', kid: target.kid, typ: 'at+jwt' })
      .sign(target.privateKey);
  const publicPem = target.publicKey.export({ format: 'pem', type: 'spki' }).toString();
  const claimsJson = JSON.stringify(claims);

  const attacks: Attack[] = [];
  for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
    const unsigned = `${b64url(JSON.stringify({ alg, typ: 'at+jwt', kid: target.kid }))}.${p}`;
    attacks.push({ name: `alg "${alg}" without signature`, token: `${unsigned}.`, reasons: ['malformed', 'unsupported_alg'] });
    attacks.push({ name: `alg "${alg}" with the original signature`, token: `${unsigned}.${s}`, reasons: ['unsupported_alg'] });
  }
  attacks.push(
    {
      name: 'HS256 signed with the RSA public key PEM as the secret',
      token: signRaw(JSON.stringify({ alg: 'HS256', typ: 'at+jwt', kid: target.kid }), claimsJson, 'HS256', Buffer.from(publicPem)),
      reasons: ['unsupported_alg', 'alg_mismatch'],
    },
    { name: 'unknown kid', token: await sign(claims, { kid: 'rs-999' }, attacker.privateKey), reasons: ['unknown_kid'] },
    { name: 'kid carrying a path', token: await sign(claims, { kid: '../../etc/passwd' }), reasons: ['unknown_kid'] },
    { name: 'kid carrying SQL', token: await sign(claims, { kid: "' OR 1=1 --" }), reasons: ['unknown_kid'] },
    { name: 'numeric kid', token: await sign(claims, { kid: 7 }), reasons: ['unknown_kid'] },
    {
      name: 'jku pointing to the attacker, signed by the attacker',
      token: await sign(claims, { kid: 'attacker', jku: `${target.attackerUrl}/jwks.json` }, attacker.privateKey),
      reasons: ['unknown_kid'],
    },
    {
      name: 'jku pointing to the attacker with our kid',
      token: await sign(claims, { jku: `${target.attackerUrl}/jwks.json` }, attacker.privateKey),
      reasons: ['bad_signature'],
    },
    {
      name: 'x5u pointing to the attacker',
      token: await sign(claims, { kid: 'attacker', x5u: `${target.attackerUrl}/cert.pem` }, attacker.privateKey),
      reasons: ['unknown_kid'],
    },
    {
      name: 'embedded jwk of the attacker',
      token: await sign(claims, { jwk: attackerJwk }, attacker.privateKey),
      reasons: ['bad_signature'],
    },
    {
      name: 'embedded jwk without kid',
      token: await sign(claims, { kid: undefined, jwk: attackerJwk }, attacker.privateKey),
      reasons: ['bad_signature', 'unknown_kid'],
    },
    { name: 'x5c of the attacker', token: await sign(claims, { x5c: ['MIIB'] }, attacker.privateKey), reasons: ['bad_signature'] },
    { name: 'expired', token: await sign({ ...claims, iat: now - 3600, exp: now - 60 }, {}), reasons: ['expired'] },
    { name: 'nbf in the future', token: await sign({ ...claims, nbf: now + 600 }, {}), reasons: ['not_yet_valid'] },
    { name: 'iat in the future', token: await sign({ ...claims, iat: now + 600, exp: now + 1200 }, {}), reasons: ['issued_in_future'] },
    { name: 'wrong iss', token: await sign({ ...claims, iss: 'https://evil.example' }, {}), reasons: ['wrong_issuer'] },
    { name: 'missing iss', token: await sign(withoutClaim(claims, 'iss'), {}), reasons: ['missing_claim'] },
    { name: 'wrong aud', token: await sign({ ...claims, aud: 'admin-api' }, {}), reasons: ['wrong_audience'] },
    { name: 'missing aud', token: await sign(withoutClaim(claims, 'aud'), {}), reasons: ['missing_claim'] },
    { name: 'missing exp', token: await sign(withoutClaim(claims, 'exp'), {}), reasons: ['missing_claim'] },
    { name: 'exp as a string', token: await rawPayload(JSON.stringify({ ...claims, exp: String(now + 600) })), reasons: ['invalid_claim'] },
    { name: 'tampered payload', token: `${h}.${b64url(JSON.stringify({ ...claims, sub: 'admin' }))}.${s}`, reasons: ['bad_signature'] },
    {
      name: 'tampered header',
      token: `${b64url(JSON.stringify({ alg: 'RS256', kid: target.kid, typ: 'at+jwt', x: 1 }))}.${p}.${s}`,
      reasons: ['bad_signature'],
    },
    { name: 'truncated signature', token: valid.slice(0, -10), reasons: ['bad_signature'] },
    { name: 'signature removed', token: `${h}.${p}.`, reasons: ['malformed'] },
    { name: 'two segments', token: `${h}.${p}`, reasons: ['malformed'] },
    { name: 'extra segment', token: `${valid}.${s}`, reasons: ['malformed'] },
    { name: 'five segments (JWE shape)', token: `${h}.${p}.${s}.${s}.${s}`, reasons: ['malformed'] },
    { name: 'standard base64 characters', token: `${h}.${p.replace(/-/g, '+').replace(/_/g, '/')}+/.${s}`, reasons: ['malformed'] },
    { name: 'base64 padding', token: `${h}.${p}.${s}=`, reasons: ['malformed'] },
    {
      name: 'non-canonical base64url',
      token: `${h.slice(0, -1)}${h.endsWith('A') ? 'B' : 'A'}.${p}.${s}`,
      reasons: ['malformed', 'bad_signature'],
    },
    { name: 'header that is not JSON', token: `${b64url('{alg:RS256}')}.${p}.${s}`, reasons: ['malformed'] },
    { name: 'payload that is a JSON array', token: await rawPayload('[1,2,3]'), reasons: ['malformed'] },
    {
      name: 'payload that is not UTF-8',
      token: `${h}.${Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString('base64url')}.${s}`,
      reasons: ['malformed'],
    },
    { name: 'a 16 KB token', token: await sign({ ...claims, pad: 'x'.repeat(16 * 1024) }, {}), reasons: ['too_large'] },
    {
      name: 'two sub members in the payload',
      token: await rawPayload(`${claimsJson.slice(0, -1)},"sub":"admin"}`),
      reasons: ['duplicate_member'],
    },
    {
      name: 'a repeated member spelled with an escape',
      token: await rawPayload(`${claimsJson.slice(0, -1)},"s\\u0075b":"admin"}`),
      reasons: ['duplicate_member'],
    },
    {
      name: 'two alg members in the header',
      token: signRaw(`{"alg":"HS256","typ":"at+jwt","kid":"${target.kid}","alg":"RS256"}`, claimsJson, 'RS256', target.privateKey),
      reasons: ['duplicate_member'],
    },
    { name: 'wrong typ', token: await sign(claims, { typ: 'JWT' }), reasons: ['wrong_typ'] },
    {
      name: 'crit header',
      token: signRaw(
        JSON.stringify({ alg: 'RS256', kid: target.kid, typ: 'at+jwt', crit: ['exp'] }),
        claimsJson,
        'RS256',
        target.privateKey,
      ),
      reasons: ['unsupported_crit'],
    },
    {
      name: 'signed with an HMAC key while RS256 is expected',
      token: await new jose.SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', kid: target.kid, typ: 'at+jwt' })
        .sign(createSecretKey(randomBytes(32))),
      reasons: ['unsupported_alg'],
    },
    {
      name: 'ES256 signed by another key under our kid',
      token: await new jose.SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: target.kid, typ: 'at+jwt' }).sign(ecPair().privateKey),
      reasons: ['unsupported_alg', 'alg_mismatch'],
    },
  );
  return attacks;
}

/**
 * Whether a compact JWS still reads as `valid` to a verifier: the same signing input and the same signature bytes.
 * A one-character change can leave both as they were (the same character, or a change in the unused low bits of the
 * signature's last base64url character), and such a "mutation" is the valid token itself.
 */
export function readsAsSameJws(candidate: string, valid: string): boolean {
  const cut = valid.lastIndexOf('.');
  const candidateCut = candidate.lastIndexOf('.');
  if (candidate.slice(0, candidateCut) !== valid.slice(0, cut)) return false;
  return Buffer.from(candidate.slice(candidateCut + 1), 'base64url').equals(Buffer.from(valid.slice(cut + 1), 'base64url'));
}

/** One character of a compact JWS replaced by one of `alphabet`, never a change that leaves the JWS as it was. */
export function mutatedJws(valid: string, alphabet: readonly string[]): fc.Arbitrary<string> {
  return fc
    .tuple(fc.nat(valid.length - 1), fc.constantFrom(...alphabet))
    .map(([index, character]) => `${valid.slice(0, index)}${character}${valid.slice(index + 1)}`)
    .filter((candidate) => !readsAsSameJws(candidate, valid));
}
