export { requireBasic, type RequireBasicOptions } from './require-basic';
export { basicCredentials, type BasicCredentialEntry, type BasicUser, type BasicVerifier } from './basic-credentials';
export { constantTimeEqual } from '../util/digest';
export { parseBasicAuthorization, type BasicAuthorization } from './basic-header';
