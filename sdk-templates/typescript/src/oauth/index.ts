export {
  discover,
  exchangeToken,
  OAuthError,
  pollDeviceToken,
  RefreshingTokenProvider,
  startDeviceAuthorization,
} from './oauth.js';
export type {
  DeviceAuthorization,
  OAuthEndpoints,
  RefreshingTokenProviderOptions,
  TokenSet,
} from './oauth.js';
