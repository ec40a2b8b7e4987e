export * from './errors';
export { OptionsError } from '../util/options';
export { errorHandler, type ErrorHandlerOptions, type ErrorLogEntry } from './error-handler';
export { toHttpError } from './to-http-error';
export { notFound, methodNotAllowed, requireRepresentation } from './handlers';
export { securityHeaders, type SecurityHeadersOptions } from './security-headers';
export { KeyValueRateLimitStore, type KeyValueRateLimitStoreOptions } from './rate-limit-store';
