export { forwardAuth, type ForwardAuthOptions, type ForwardAuthAssertionOptions } from './forward-auth';
export type { IdentityHeaderNames } from './identity-headers';
export type { OriginalRequest } from './original-request';
