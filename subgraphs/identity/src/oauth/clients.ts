/**
 * The OAuth clients: first-party and public (no client secret; PKCE or the device grant protect them). The console
 * signs users in with authorization code + PKCE at exactly the configured redirect URIs; the desktop host enrols by
 * the device grant and mints sidecar tokens by token exchange.
 */
import type { Config } from '@agentgraph/runtime';
import type { ClientMetadata } from 'oidc-provider';
import {
  CONSOLE_CLIENT_ID,
  DESKTOP_CLIENT_ID,
  DEVICE_CODE_GRANT,
  TOKEN_EXCHANGE_GRANT,
} from './constants.js';

export const CLIENT_NAMES: Record<string, string> = {
  [CONSOLE_CLIENT_ID]: 'AgentGraph web console',
  [DESKTOP_CLIENT_ID]: 'AgentGraph desktop host',
};

export function clientsFor(config: Pick<Config, 'oauth'>): ClientMetadata[] {
  return [
    {
      client_id: CONSOLE_CLIENT_ID,
      client_name: CLIENT_NAMES[CONSOLE_CLIENT_ID],
      token_endpoint_auth_method: 'none',
      application_type: 'web',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: config.oauth.consoleRedirectUris,
      post_logout_redirect_uris: config.oauth.consoleRedirectUris,
      id_token_signed_response_alg: 'ES256',
    },
    {
      client_id: DESKTOP_CLIENT_ID,
      client_name: CLIENT_NAMES[DESKTOP_CLIENT_ID],
      token_endpoint_auth_method: 'none',
      application_type: 'native',
      grant_types: [DEVICE_CODE_GRANT, 'refresh_token', TOKEN_EXCHANGE_GRANT],
      response_types: [],
      redirect_uris: [],
      id_token_signed_response_alg: 'ES256',
    },
  ];
}
