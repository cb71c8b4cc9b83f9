import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { WORKER_SHUTDOWN_GRACE_SECONDS_DEFAULT } from '../src/config.js';
import { readGraphFile } from '../src/tasks/graphFile.js';

// Static checks only: there is no Docker engine here, so the files are parsed, not run.

type Environment = Record<string, string | number | boolean | null> | string[];
type DependsOn = string[] | Record<string, { condition?: string } | null>;

interface Service {
  image?: string;
  build?: unknown;
  command?: unknown;
  environment?: Environment;
  depends_on?: DependsOn;
  ports?: Array<string | number | { target?: number | string; published?: number | string }>;
  deploy?: { replicas?: number };
  stop_grace_period?: string;
  user?: string;
  configs?: Array<string | { source?: string; target?: string }>;
  cap_add?: string[];
  security_opt?: string[];
  devices?: string[];
  volumes?: unknown[];
  healthcheck?: { test?: string[] | string };
}

interface ComposeFile {
  services?: Record<string, Service | null>;
  configs?: Record<string, { content?: string } | null>;
}

const composeUrl = new URL('../docker-compose.yml', import.meta.url);
const dockerfileUrl = new URL('../Dockerfile', import.meta.url);
const compose = YAML.parse(readFileSync(composeUrl, 'utf8')) as ComposeFile;
const services = compose.services ?? {};

const REQUIRED_SERVICES = ['postgres', 'temporal-admin-tools', 'temporal', 'temporal-ui', 'baton-migrate', 'baton-worker', 'git'];
/** The versions Temporal's own compose files pin together (its .env), as test/fixtures/temporal-compose.env records them. */
const TEMPORAL_PINS = Object.fromEntries(
  readFileSync(new URL('./fixtures/temporal-compose.env', import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => /^[A-Z_]+=/.test(line))
    .map((line) => line.split('=') as [string, string]),
);

/** A required variable reference, as Compose writes it: `${NAME:?message}`. */
const REQUIRED_VARIABLE = /^\$\{([A-Z_]+):\?[^}]*\}$/;

/** `value` with each `${NAME...}` reference replaced by `<NAME>`, as if Compose had filled it in. */
const interpolate = (value: string) => value.replace(/\$\{([A-Z_]+)[^}]*\}/g, (_, name: string) => `${name.toLowerCase()}-value`);

/** expect() whose failure message names the service and what was checked. */
function expectOf(service: string, what: string, actual: unknown) {
  return expect(actual, `service '${service}': ${what}`);
}

/** The named service; fails, naming it, when docker-compose.yml does not define it. */
function service(name: string): Service {
  const found = services[name];
  expectOf(name, 'is defined in docker-compose.yml', found).toBeTruthy();
  return found as Service;
}

/** The service's environment as a map, whether written as a map or as `KEY=value` lines. */
function env(name: string): Record<string, string> {
  const raw = service(name).environment ?? {};
  const entries = Array.isArray(raw)
    ? raw.map((line): [string, string] => {
        const eq = line.indexOf('=');
        return eq < 0 ? [line, ''] : [line.slice(0, eq), line.slice(eq + 1)];
      })
    : Object.entries(raw).map(([key, value]): [string, string] => [key, value === null ? '' : String(value)]);
  return Object.fromEntries(entries);
}

/** depends_on as target -> condition (the short list form means `service_started`). */
function dependsOn(name: string): Record<string, string> {
  const raw = service(name).depends_on ?? {};
  if (Array.isArray(raw)) return Object.fromEntries(raw.map((target) => [target, 'service_started']));
  return Object.fromEntries(Object.entries(raw).map(([target, spec]) => [target, spec?.condition ?? 'service_started']));
}

/** The tag of an image reference (`registry:5000/name:tag`), or undefined when it has none. */
function imageTag(image: string): string | undefined {
  const withoutDigest = image.split('@')[0] ?? '';
  const colon = withoutDigest.lastIndexOf(':');
  if (colon < 0) return undefined;
  const tag = withoutDigest.slice(colon + 1);
  return tag.includes('/') ? undefined : tag;
}

/** Splits `host:port`. */
function hostPort(address: string): { host: string; port: string } {
  const colon = address.lastIndexOf(':');
  return colon < 0 ? { host: address, port: '' } : { host: address.slice(0, colon), port: address.slice(colon + 1) };
}

describe('docker-compose.yml: the production topology', () => {
  it('defines postgres, temporal-admin-tools, temporal, temporal-ui, baton-migrate and baton-worker', () => {
    for (const name of REQUIRED_SERVICES) service(name);
  });

  it('pins every image to an explicit tag other than latest', () => {
    for (const [name, svc] of Object.entries(services)) {
      if (svc?.image === undefined) continue;
      const tag = imageTag(svc.image);
      expectOf(name, `image '${svc.image}' has an explicit tag`, tag).toBeTruthy();
      expectOf(name, `image '${svc.image}' is not tagged latest`, tag).not.toBe('latest');
    }
  });

  it('starts temporal on postgres12 after the admin tools have set up its schema', () => {
    expectOf('temporal', 'waits for temporal-admin-tools to complete', dependsOn('temporal')['temporal-admin-tools']).toBe(
      'service_completed_successfully',
    );
    const temporal = env('temporal');
    expectOf('temporal', 'DB', temporal.DB).toBe('postgres12');
    expectOf('temporal', 'POSTGRES_SEEDS names the postgres service', temporal.POSTGRES_SEEDS).toBe('postgres');
    expectOf('temporal', 'publishes the frontend port 7233', (service('temporal').ports ?? []).map(String).join(' ')).toMatch(/\b7233\b/);
  });

  it('gives temporal the dynamic config baton relies on: timers within 100 ms of their time, fairness on', () => {
    const mounted = (service('temporal').configs ?? []).find(
      (c) => typeof c === 'object' && c.target === '/etc/temporal/config/dynamicconfig/docker.yaml',
    );
    expectOf('temporal', "mounts a config over the image's dynamic config file", mounted).toBeTruthy();
    const source = typeof mounted === 'object' ? (mounted.source ?? '') : '';
    const settings = YAML.parse(compose.configs?.[source]?.content ?? '') as Record<string, Array<{ value: unknown }>> | null;
    expectOf(
      'temporal',
      `config '${source}': history.timerProcessorMaxTimeShift`,
      settings?.['history.timerProcessorMaxTimeShift'],
    ).toEqual([{ value: '100ms' }]);
    expectOf('temporal', `config '${source}': matching.enableFairness`, settings?.['matching.enableFairness']).toEqual([{ value: true }]);
  });

  it('has temporal-admin-tools set up both Temporal schemas with the postgres12 plugin', () => {
    const script = JSON.stringify(service('temporal-admin-tools').command ?? '') + JSON.stringify(env('temporal-admin-tools'));
    expectOf('temporal-admin-tools', 'runs temporal-sql-tool', script).toContain('temporal-sql-tool');
    expectOf('temporal-admin-tools', 'uses the postgres12 plugin', script).toContain('postgres12');
    expectOf('temporal-admin-tools', 'updates the main schema', script).toContain('temporal/versioned');
    expectOf('temporal-admin-tools', 'updates the visibility schema', script).toContain('visibility/versioned');
    expectOf('temporal-admin-tools', 'waits for postgres to be healthy', dependsOn('temporal-admin-tools').postgres).toBe(
      'service_healthy',
    );
  });

  it("points the UI's TEMPORAL_ADDRESS at the temporal service on 7233", () => {
    expectOf('temporal-ui', 'TEMPORAL_ADDRESS', hostPort(env('temporal-ui').TEMPORAL_ADDRESS ?? '')).toEqual({
      host: 'temporal',
      port: '7233',
    });
  });

  it('builds baton-worker from the Dockerfile and connects it to postgres and temporal:7233', () => {
    expectOf('baton-worker', 'has build', service('baton-worker').build).toBeTruthy();
    const worker = env('baton-worker');
    const databaseUrl = interpolate(worker.DATABASE_URL ?? '');
    expectOf('baton-worker', `DATABASE_URL '${databaseUrl}' is a postgresql:// URL`, databaseUrl).toMatch(/^postgres(ql)?:\/\//);
    expectOf('baton-worker', 'DATABASE_URL host', URL.canParse(databaseUrl) ? new URL(databaseUrl).hostname : databaseUrl).toBe('postgres');
    expectOf('baton-worker', 'TEMPORAL_ADDRESS', worker.TEMPORAL_ADDRESS).toBe('temporal:7233');
  });

  it("gives baton-worker longer to stop than its drain's grace, so a redeploy hands claims back instead of killing runs", () => {
    const stopGrace = /^(\d+)s$/.exec(String(service('baton-worker').stop_grace_period ?? ''));
    expectOf('baton-worker', `stop_grace_period ${service('baton-worker').stop_grace_period} in seconds`, stopGrace).toBeTruthy();
    expectOf(
      'baton-worker',
      'runs baton worker with the default grace',
      (service('baton-worker').command as string[]).join(' '),
    ).not.toMatch(/--shutdown-grace/);
    expectOf('baton-worker', 'stop_grace_period (s)', Number(stopGrace![1])).toBeGreaterThan(WORKER_SHUTDOWN_GRACE_SECONDS_DEFAULT);
  });

  it('serves the agent API from baton-agent-api on a login of its own that the migrator creates in the agent group', () => {
    expectOf('baton-agent-api', 'runs baton serve', ((service('baton-agent-api').command ?? []) as string[]).join(' ')).toMatch(
      /bin\/baton\.js serve --host 0\.0\.0\.0/,
    );
    const login = new URL(interpolate(env('baton-agent-api').DATABASE_URL ?? '')).username;
    expectOf('baton-agent-api', 'logs in as its own login', login).toBe('baton_app_agent');
    expectOf('baton-agent-api', 'is not the worker login', login).not.toBe(
      new URL(interpolate(env('baton-worker').DATABASE_URL ?? '')).username,
    );
    const migrate = JSON.stringify(service('baton-migrate').command ?? '');
    expectOf('baton-migrate', 'creates that login in the agent group', migrate).toMatch(/login baton_app_agent --role agent/);
    expectOf('baton-agent-api', 'publishes 8484', (service('baton-agent-api').ports ?? []).map(String).join(' ')).toMatch(/8484:8484/);
  });

  it('publishes ports on 127.0.0.1 only: Postgres, Temporal, its UI and the agent API are not open to the network', () => {
    const published = Object.entries(services).flatMap(([name, s]) => (s?.ports ?? []).map((p) => [name, p] as const));
    expect(published.length).toBeGreaterThan(0);
    for (const [name, port] of published) {
      const where = typeof port === 'object' ? (port as { host_ip?: string }).host_ip : String(port).split(':').slice(0, -2).join(':');
      expectOf(name, `port ${JSON.stringify(port)} binds`, where).toBe('127.0.0.1');
    }
  });

  it('writes no password: each is a required variable from .env', () => {
    for (const name of Object.keys(services)) {
      for (const [key, value] of Object.entries(env(name))) {
        if (/PASSWORD|PWD/.test(key)) expectOf(name, `${key} is \${VARIABLE:?...}, not a literal`, value).toMatch(REQUIRED_VARIABLE);
        const url = /^postgres(ql)?:\/\/[^:@/]+:([^@]*)@/.exec(value);
        if (url) expectOf(name, `the password in ${key} is \${VARIABLE:?...}, not a literal`, url[2]).toMatch(REQUIRED_VARIABLE);
      }
    }
  });

  it("runs workers on a least-privilege login that baton-migrate makes, never as the database's administrator", () => {
    const admin = env('postgres').POSTGRES_USER;
    const workerLogin = new URL(interpolate(env('baton-worker').DATABASE_URL ?? '')).username;
    expectOf('baton-worker', 'DATABASE_URL login is not the administrator', workerLogin).not.toBe(admin);
    expectOf('baton-worker', 'waits for baton-migrate to complete', dependsOn('baton-worker')['baton-migrate']).toBe(
      'service_completed_successfully',
    );
    const script = JSON.stringify(service('baton-migrate').command ?? '');
    expectOf('baton-migrate', 'migrates', script).toMatch(/bin\/baton\.js migrate\b/);
    expectOf('baton-migrate', `creates the worker login ${workerLogin} in the worker role`, script).toContain(
      `login ${workerLogin} --role worker`,
    );
    expectOf('baton-migrate', 'connects as the administrator', new URL(interpolate(env('baton-migrate').DATABASE_URL ?? '')).username).toBe(
      admin,
    );
    expectOf('baton-migrate', "gives the login the worker's password", env('baton-migrate').BATON_LOGIN_PASSWORD).toBe(
      /:(\$\{[^}]+\})@/.exec(env('baton-worker').DATABASE_URL ?? '')?.[1],
    );
  });

  it('has a Dockerfile built FROM node 20', () => {
    expect(existsSync(dockerfileUrl), 'Dockerfile exists next to docker-compose.yml').toBe(true);
    const from = /^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)/im.exec(readFileSync(dockerfileUrl, 'utf8'))?.[1];
    expect(from, 'Dockerfile FROM image').toMatch(/^(docker\.io\/)?(library\/)?node:20(?:[.-]|$)/);
  });

  it('installs the packed package beside the Temporal SDK version baton is tested against', () => {
    const dockerfile = readFileSync(dockerfileUrl, 'utf8');
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      devDependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
    };
    expect(dockerfile).toMatch(/RUN npm pack /);
    expect(/ARG TEMPORAL_SDK_VERSION=(\S+)/.exec(dockerfile)?.[1]).toBe(manifest.devDependencies['@temporalio/worker']);
    // Every required peer (the SDK's packages) is installed at that version; none is left to chance.
    for (const name of Object.keys(manifest.peerDependencies).filter((n) => n !== '@temporalio/testing'))
      expect(dockerfile, name).toContain(`${name}@\${TEMPORAL_SDK_VERSION}`);
    // The compose services run `node bin/baton.js ...` in /app: the image links the package's bin there.
    expect(dockerfile).toMatch(/ln -s node_modules\/@batonhq\/baton\/bin bin/);
    // The runtime stage (after the last FROM) has git: worktrees, commit checks and verification use it.
    expect(dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))).toMatch(/apt-get install [^\n]*\bgit\b/);
  });

  it("runs Temporal's images at the versions Temporal's own compose files pin together", () => {
    expect(Object.keys(TEMPORAL_PINS).sort()).toEqual(['TEMPORAL_ADMINTOOLS_VERSION', 'TEMPORAL_UI_VERSION', 'TEMPORAL_VERSION']);
    const expected: Record<string, string> = {
      'temporalio/server': TEMPORAL_PINS.TEMPORAL_VERSION!,
      'temporalio/admin-tools': TEMPORAL_PINS.TEMPORAL_ADMINTOOLS_VERSION!,
      'temporalio/ui': TEMPORAL_PINS.TEMPORAL_UI_VERSION!,
    };
    const temporalImages = Object.entries(services).filter(([, s]) => s?.image?.startsWith('temporalio/'));
    expect(temporalImages.length).toBeGreaterThanOrEqual(4);
    for (const [name, svc] of temporalImages) {
      const [repository, tag] = svc!.image!.split(':');
      expectOf(name, `image ${svc!.image} is one Temporal pins`, Object.keys(expected)).toContain(repository);
      expectOf(name, `image ${svc!.image} has the tag Temporal's compose files give ${repository}`, tag).toBe(expected[repository!]);
    }
  });

  it('isolates agents, asked for by name, with the privileges isolation needs and nothing shared between workers', () => {
    const worker = service('baton-worker');
    expect(env('baton-worker')).toMatchObject({
      BATON_AGENT_USER: 'per-run',
      BATON_AGENT_SANDBOX: 'bubblewrap',
      BATON_AGENT_NETWORK: 'outside',
    });
    expectOf('baton-worker', 'runs as root (per-run agent users)', worker.user).toBe('root');
    expectOf('baton-worker', 'cap_add', worker.cap_add).toEqual(expect.arrayContaining(['SYS_ADMIN', 'NET_ADMIN']));
    expectOf('baton-worker', 'security_opt', worker.security_opt).toEqual(
      expect.arrayContaining(['seccomp=unconfined', 'apparmor=unconfined']),
    );
    expectOf('baton-worker', 'devices', worker.devices).toEqual(['/dev/net/tun:/dev/net/tun']);
    expectOf('baton-worker', 'mounts no volume: its work folder and mirrors are its own', worker.volumes).toBeUndefined();
    // The image carries what isolation runs, and an example agent.
    const runtime = readFileSync(dockerfileUrl, 'utf8')
      .split(/\nFROM /)
      .pop()!;
    expect(runtime).toMatch(/apt-get install [^\n]*\bbubblewrap\b[^\n]*\bslirp4netns\b/);
    expect(runtime).toMatch(/COPY examples\/agents\/hello-agent\.sh \/usr\/local\/bin\/hello-agent/);
  });

  it('serves the example graph its repository as a git remote on the compose network, unpublished', async () => {
    const graph = await readGraphFile(fileURLToPath(new URL('../examples/compose-graph.yaml', import.meta.url)));
    const repo = new URL(String((graph as { repo: string }).repo));
    expect(repo.protocol).toBe('git:');
    expectOf(repo.hostname, 'the example graph names a service of the compose file', Object.keys(services)).toContain(repo.hostname);
    const git = service(repo.hostname);
    expectOf(repo.hostname, 'publishes no port (git daemon has no authentication)', git.ports).toBeUndefined();
    expectOf(repo.hostname, 'serves the repository the graph names', JSON.stringify(git.command)).toContain(`--base-path=/srv/git`);
    expectOf(repo.hostname, 'makes the repository it serves', JSON.stringify(git.command)).toContain(`/srv/git${repo.pathname}`);
    expectOf('baton-worker', 'waits for the remote to answer', dependsOn('baton-worker')[repo.hostname]).toBe('service_healthy');
  });

  it('checks the health of every long-running service of its own', () => {
    for (const name of ['postgres', 'git', 'baton-worker', 'baton-agent-api']) {
      expectOf(name, 'has a healthcheck test', service(name).healthcheck?.test).toBeTruthy();
    }
    // The long-running baton services are healthy when their own /readyz says so (Postgres with the schema, Temporal).
    for (const name of ['baton-worker', 'baton-agent-api']) {
      const command = service(name).command as string[];
      const port = command.includes('--ops-port') ? command[command.indexOf('--ops-port') + 1] : undefined;
      expectOf(name, 'serves its ops port', port).toBeTruthy();
      expectOf(name, 'checks its own /readyz', JSON.stringify(service(name).healthcheck?.test)).toContain(`127.0.0.1:${port}/readyz`);
    }
  });

  it('only depends on services it defines', () => {
    const defined = Object.keys(services);
    for (const name of defined) {
      for (const target of Object.keys(dependsOn(name))) {
        expectOf(name, `depends_on target '${target}' is a defined service`, defined).toContain(target);
      }
    }
  });
});
