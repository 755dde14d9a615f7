/**
 * Boot: ask the token handler for an access token (the refresh cookie, if any), then load who the user is and show
 * the app, or the sign-in screen when there is no session.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { sdk } from './api.js';
import { App } from './app.js';
import { onSessionChange, refreshSession, signInUrl } from './session.js';
import { ProblemNotice } from './ui/problem.js';
import { ViewerContext, type Viewer } from './ui/viewer.js';
import './styles.css';

const SIGNIN_ERRORS: Record<string, string> = {
  expired: 'The sign-in took too long or was started in another tab. Please sign in again.',
  access_denied: 'Sign-in was cancelled.',
};

function SignIn() {
  const reason = new URLSearchParams(location.search).get('signin');
  return (
    <main id="main" class="signin">
      <h1>AgentGraph console</h1>
      <p>Sign in with your AgentGraph account to manage devices, intents, rooms, memory and plugins.</p>
      {reason ? (
        <p class="problem" role="alert">
          {SIGNIN_ERRORS[reason] ?? `Sign-in failed (${reason}). Please try again.`}
        </p>
      ) : null}
      <p>
        <a class="button primary" href={signInUrl(location.pathname === '/' ? '/' : location.pathname)}>
          Sign in
        </a>
      </p>
    </main>
  );
}

type State =
  | { kind: 'loading' }
  | { kind: 'signed-out' }
  | { kind: 'in'; viewer: Viewer }
  | { kind: 'failed'; error: unknown };

function Root() {
  const [state, setState] = useState<State>({ kind: 'loading' });
  useEffect(() => {
    const start = async () => {
      try {
        const session = await refreshSession();
        if (!session) return setState({ kind: 'signed-out' });
        const data = await sdk.viewer();
        if (location.search.includes('signin=')) history.replaceState(null, '', location.pathname);
        setState({ kind: 'in', viewer: data.viewer });
      } catch (error) {
        setState({ kind: 'failed', error });
      }
    };
    void start();
    return onSessionChange((signedIn) => {
      if (!signedIn) setState({ kind: 'signed-out' });
    });
  }, []);

  if (state.kind === 'loading') {
    return (
      <p role="status" class="boot">
        Signing in…
      </p>
    );
  }
  if (state.kind === 'signed-out') return <SignIn />;
  if (state.kind === 'failed') {
    return (
      <main id="main" class="signin">
        <h1>AgentGraph console</h1>
        <ProblemNotice error={state.error} title="The console could not start" />
        <button type="button" onClick={() => location.reload()}>
          Try again
        </button>
      </main>
    );
  }
  return (
    <ViewerContext.Provider value={state.viewer}>
      <App />
    </ViewerContext.Provider>
  );
}

render(<Root />, document.getElementById('app')!);
