/**
 * The signed-in session, in memory only: the access token lives in this module's variable (never in localStorage,
 * sessionStorage or a readable cookie). The refresh token is an HttpOnly cookie the gateway's token handler keeps;
 * `/auth/refresh` trades it for a fresh access token. Concurrent callers share one refresh.
 */
const CSRF_HEADER = 'x-agentgraph-csrf';

interface AccessToken {
  value: string;
  expiresAt: number;
}

let current: AccessToken | null = null;
let refreshing: Promise<AccessToken | null> | null = null;
const listeners = new Set<(signedIn: boolean) => void>();

/** Told when the session ends (refresh refused): the app shows the sign-in screen. */
export function onSessionChange(listener: (signedIn: boolean) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export class SessionError extends Error {
  constructor(
    readonly reason: 'signed_out' | 'unavailable' | 'csrf',
    message: string,
  ) {
    super(message);
    this.name = 'SessionError';
  }
}

async function post(path: string): Promise<Response> {
  return fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { [CSRF_HEADER]: '1', accept: 'application/json' },
  });
}

/** A new access token from the refresh cookie; null when there is no session. */
export function refreshSession(): Promise<AccessToken | null> {
  refreshing ??= (async () => {
    try {
      const res = await post('/auth/refresh');
      if (res.status === 401) {
        current = null;
        listeners.forEach((l) => l(false));
        return null;
      }
      const body = (await res.json()) as { accessToken?: string; expiresAt?: number; message?: string };
      if (!res.ok || typeof body.accessToken !== 'string' || typeof body.expiresAt !== 'number') {
        throw new SessionError(
          res.status === 403 ? 'csrf' : 'unavailable',
          body.message ?? `Sign-in service answered HTTP ${res.status}. Try again in a moment.`,
        );
      }
      current = { value: body.accessToken, expiresAt: body.expiresAt };
      return current;
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

/** The SDK's token provider: the in-memory token, renewed a minute before it expires. */
export const tokenProvider = {
  async getToken(): Promise<string> {
    if (current && current.expiresAt - Date.now() > 60_000) return current.value;
    return (await this.refresh()) as string;
  },
  async refresh(): Promise<string> {
    const next = await refreshSession();
    if (!next) throw new SessionError('signed_out', 'Your session ended. Sign in again.');
    return next.value;
  },
};

export async function signOut(): Promise<void> {
  await post('/auth/signout').catch(() => undefined);
  current = null;
  listeners.forEach((l) => l(false));
}

/** Where the sign-in button goes: the token handler starts authorization code + PKCE and comes back to `to`. */
export function signInUrl(to: string = location.pathname): string {
  return `/auth/signin?to=${encodeURIComponent(to)}`;
}
