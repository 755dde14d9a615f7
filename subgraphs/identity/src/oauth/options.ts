/** OAuth service settings that come from the environment (read through runtime's config only). */
import type { Config } from '@agentgraph/runtime';
import type { OAuthServiceOptions } from './service.js';

export function oauthOptionsFrom(config: Pick<Config, 'oauth'>): OAuthServiceOptions {
  return {
    devicePollIntervalSeconds: config.oauth.devicePollIntervalSeconds,
    signingKeyRotationSeconds: config.oauth.signingKeyRotationSeconds,
  };
}
