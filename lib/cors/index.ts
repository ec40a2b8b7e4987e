export { corsPreflight, type CorsPreflightOptions } from './cors-preflight';
export { compileOrigins, type OriginMatcher } from './origin-matcher';
