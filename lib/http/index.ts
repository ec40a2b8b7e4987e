export * from './errors';
export { errorHandler, toHttpError, type ErrorHandlerOptions, type ErrorLogEntry } from './error-handler';
export { notFound, methodNotAllowed, requireRepresentation } from './handlers';
export { securityHeaders, type SecurityHeadersOptions } from './security-headers';
export { KeyValueRateLimitStore, type KeyValueRateLimitStoreOptions } from './rate-limit-store';
