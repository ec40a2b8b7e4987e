export { DpopError, type DpopErrorReason, type DpopErrorCode } from './dpop-error';
export { DpopVerifier, type DpopVerifierOptions, type DpopRequestFacts, type VerifiedDpopProof } from './dpop-verifier';
export type { DpopNonceOptions } from './dpop-nonces';
export { DPOP_ALGORITHMS, DEFAULT_DPOP_ALGORITHMS, jwkThumbprint, type DpopAlgorithm } from './proof-key';
export { dpopTargetUri, tokenRequestProof, dpopTokenError, type TokenRequestProofOptions } from './dpop-request';
export type { DpopMode, RequireDpopOptions } from './require-dpop';
