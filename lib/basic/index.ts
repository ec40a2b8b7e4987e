export { requireBasic, type RequireBasicOptions } from './require-basic';
export { basicCredentials, constantTimeEqual, type BasicCredentialEntry, type BasicUser, type BasicVerifier } from './basic-credentials';
export { parseBasicAuthorization, type BasicAuthorization } from './basic-header';
