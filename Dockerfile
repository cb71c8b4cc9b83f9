# baton worker image; docker-compose.yml runs it as `baton-worker`.
FROM node:20.20-bookworm-slim

WORKDIR /app

COPY package.json package-lock.json ./
# tsx (runs the TypeScript sources) is a regular dependency, so dev dependencies can be left out.
RUN npm ci --omit=dev && npm cache clean --force

# One COPY per directory: a multi-source COPY would merge their contents into /app.
COPY bin ./bin
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY tsconfig.json ./

# baton creates its state folder on start even when DATABASE_URL/TEMPORAL_ADDRESS are set;
# /app is root-owned, so point it somewhere the node user can write.
ENV BATON_HOME=/home/node/.baton

USER node
CMD ["node", "bin/baton.js", "worker"]
