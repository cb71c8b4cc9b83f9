// The operator's page (SPEC U4): who owns what in this baton deployment, and why it moved, live.
// Signs in with a token (a view token sees everything; an admin token may also cancel and rerun),
// follows the event log, and routes by the address's fragment: #/, #/graph/<id>, #/task/<id>,
// #/objects[/<key>], #/pools, #/tokens.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { AgentApiResult } from '../../src/api/operationResults.js';
import { api, ApiError, pageConfig, saveToken, savedToken, takeTokenFromAddress, type PageConfig } from './api.js';
import { ErrorBox } from './common.js';
import { Graph } from './Graph.js';
import { Graphs } from './Graphs.js';
import { useLive, type LiveState } from './live.js';
import { Objects } from './Objects.js';
import { Pools, Tokens } from './Pools.js';
import { Task } from './Task.js';
import './style.css';

type Whoami = AgentApiResult<'whoami'>;

function route(hash: string): string[] {
  return hash
    .replace(/^#\/?/, '')
    .split('/')
    .filter(Boolean)
    .map((part) => {
      try {
        return decodeURIComponent(part);
      } catch {
        return part; // a stray % is shown as written
      }
    });
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return hash;
}

function App() {
  const [who, setWho] = useState<Whoami | undefined>();
  const [signInError, setSignInError] = useState<Error | undefined>();
  const [checking, setChecking] = useState(Boolean(savedToken()));
  const [config, setConfig] = useState<PageConfig>({});
  const hash = useHash();

  const signIn = async (token: string | undefined) => {
    saveToken(token);
    setSignInError(undefined);
    if (!token) return setWho(undefined);
    setChecking(true);
    try {
      const who = await api('whoami');
      if (!who.scopes.includes('view') && !who.scopes.includes('admin')) {
        throw new ApiError(
          403,
          'scope',
          `token ${who.id} of ${who.identity} has scope ${who.scopes.join(', ')}; the page needs view (or admin): baton token create <you> --scope view`,
        );
      }
      setWho(who);
    } catch (error) {
      saveToken(undefined);
      setWho(undefined);
      setSignInError(error as Error);
    } finally {
      setChecking(false);
    }
  };
  useEffect(() => {
    void signIn(savedToken());
    void pageConfig().then(setConfig, () => undefined);
  }, []);
  const live = useLive(who !== undefined, (error) => {
    saveToken(undefined);
    setWho(undefined);
    setSignInError(error);
  });

  if (!who) return <SignIn checking={checking} error={signInError} onSignIn={signIn} />;
  const admin = who.scopes.includes('admin');
  // U11: who may decide the tasks awaiting a person's approval.
  const approver = admin || who.scopes.includes('approve');
  const [view = '', ...rest] = route(hash);
  const id = rest.join('/');
  return (
    <>
      <header>
        <a class="brand" href="#/">
          baton
        </a>
        <nav aria-label="Views">
          <a href="#/" aria-current={view === '' || view === 'graph' ? 'page' : undefined}>
            Graphs
          </a>
          <a href="#/objects" aria-current={view === 'objects' ? 'page' : undefined}>
            Objects
          </a>
          <a href="#/pools" aria-current={view === 'pools' ? 'page' : undefined}>
            Pools
          </a>
          {admin ? (
            <a href="#/tokens" aria-current={view === 'tokens' ? 'page' : undefined}>
              Tokens
            </a>
          ) : null}
        </nav>
        <LiveIndicator state={live.state} />
        <span class="who">
          {who.identity} <span class="muted">({who.scopes.join(', ')})</span>{' '}
          <button type="button" onClick={() => void signIn(undefined)}>
            Sign out
          </button>
        </span>
      </header>
      {view === '' ? <Graphs liveVersion={live.version} /> : null}
      {view === 'graph' ? <Graph graphId={id} liveVersion={live.version} admin={admin} config={config} /> : null}
      {view === 'task' ? <Task taskId={id} liveVersion={live.version} admin={admin} approver={approver} config={config} /> : null}
      {view === 'objects' ? <Objects objectKey={id || undefined} liveVersion={live.version} /> : null}
      {view === 'pools' ? <Pools liveVersion={live.version} /> : null}
      {view === 'tokens' ? <Tokens liveVersion={live.version} /> : null}
      {!['', 'graph', 'task', 'objects', 'pools', 'tokens'].includes(view) ? (
        <main>
          <ErrorBox error={new Error(`there is no view "${view}"`)} what="Not found" />
        </main>
      ) : null}
    </>
  );
}

function LiveIndicator({ state }: { state: LiveState }) {
  if (state.kind === 'live')
    return (
      <span class="live ok" role="status">
        live
      </span>
    );
  if (state.kind === 'connecting')
    return (
      <span class="live" role="status">
        connecting…
      </span>
    );
  return (
    <span class="live lost" role="status" title={state.reason}>
      connection lost: {state.reason}; retrying (attempt {state.attempt})
    </span>
  );
}

function SignIn({ checking, error, onSignIn }: { checking: boolean; error?: Error; onSignIn: (token: string) => void }) {
  const [token, setToken] = useState('');
  return (
    <main class="sign-in">
      <h1>baton</h1>
      <p>
        Sign in with a token: <code>baton token create &lt;you&gt; --scope view</code> to look, <code>--scope admin</code> to cancel and
        rerun too. <code>baton dev</code> prints an address that signs you in.
      </p>
      {error ? (
        <ErrorBox error={error} what={error instanceof ApiError && error.tokenRefused ? 'The token was refused' : 'Could not sign in'} />
      ) : null}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (token.trim()) onSignIn(token.trim());
        }}
      >
        <label>
          Token{' '}
          <input type="password" name="token" autoComplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} autoFocus />
        </label>{' '}
        <button type="submit" disabled={checking || !token.trim()}>
          {checking ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

// Before anything reads the address: a token handed over in it is not a route.
takeTokenFromAddress();
render(<App />, document.getElementById('app')!);
