# baton worker image; docker-compose.yml runs it as `baton-worker`. It is built the way a team
# installs baton: the packed package, installed beside the Temporal SDK (baton's peer dependency).
FROM node:20.20-bookworm-slim AS pack

WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# One COPY per directory: a multi-source COPY would merge their contents into one folder.
COPY bin ./bin
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY scripts ./scripts
COPY docs ./docs
COPY tsconfig.json tsconfig.build.json README.md LICENSE CHANGELOG.md ./
# npm pack builds dist/ first (compiled code, SQL, prebuilt workflow bundle).
RUN npm pack --pack-destination /tmp && mv /tmp/batonhq-baton-*.tgz /tmp/baton.tgz

FROM node:20.20-bookworm-slim

# The Temporal SDK version baton is developed and tested against (package.json's devDependencies).
ARG TEMPORAL_SDK_VERSION=1.24.0

# git: the command runner's worktrees, the mirrors of remote repositories, the pool runner's commit
# check and the verifier all need it (and `git daemon` serves the compose file's example remote).
# bubblewrap and slirp4netns: the agents' sandbox and its outside network (docs/isolation.md); the
# worker runs as root so each run gets a user of its own, with the privileges docker-compose.yml gives it.
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates bubblewrap slirp4netns \
  && rm -rf /var/lib/apt/lists/*

# An example command agent (`run: hello-agent`), for a first graph before a real agent's CLI is installed.
COPY examples/agents/hello-agent.sh /usr/local/bin/hello-agent

WORKDIR /app
COPY --from=pack /tmp/baton.tgz /tmp/baton.tgz
# No optional dependencies: an image talks to the Postgres it is given, never an embedded one.
RUN echo '{"name":"baton-worker","private":true}' > package.json \
  && npm install --omit=optional --no-audit --no-fund /tmp/baton.tgz \
     @temporalio/activity@${TEMPORAL_SDK_VERSION} @temporalio/client@${TEMPORAL_SDK_VERSION} \
     @temporalio/common@${TEMPORAL_SDK_VERSION} @temporalio/envconfig@${TEMPORAL_SDK_VERSION} \
     @temporalio/worker@${TEMPORAL_SDK_VERSION} @temporalio/workflow@${TEMPORAL_SDK_VERSION} \
     @temporalio/interceptors-opentelemetry@${TEMPORAL_SDK_VERSION} \
  && npm cache clean --force && rm /tmp/baton.tgz \
  && ln -s node_modules/@batonhq/baton/bin bin

# baton creates its state folder on start even when DATABASE_URL/TEMPORAL_ADDRESS are set;
# /app is root-owned, so point it somewhere the node user can write.
ENV BATON_HOME=/home/node/.baton

# The API, the migrator and the git example run as node; docker-compose.yml runs the worker as root
# (per-run agent users need it) with its work folder in /var/lib/baton.
USER node
CMD ["node", "bin/baton.js", "worker"]
