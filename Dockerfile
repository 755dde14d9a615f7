# syntax=docker/dockerfile:1
# One image for every agentgraph service; the command picks the service (compose.yaml, README "Running in production"):
#   node --import tsx gateway/src/migrate.ts            the migrations job (once, before the services)
#   node --import tsx subgraphs/<name>/src/main.ts      identity :4101, memory :4102, coordination :4103, catalog :4104
#   node --import tsx gateway/src/standalone.ts         the gateway :4000 (the default)
#   node --import tsx subgraphs/identity/src/cli.ts     the admin CLI (bootstrap, create-user, rotate-keys, ...)
# TypeScript runs through tsx, as in development (no build step; tsx caches its transforms under /tmp).
# test/e2e/production-shape.test.ts checks that every command here and in compose.yaml names a file that exists.

ARG NODE_IMAGE=node:24-bookworm-slim

# Dependencies: production ones only (tsx is one), from the lock file, without install scripts: the only native one,
# better-sqlite3, is the SDK outbox's, which no service loads (so no toolchain and no prebuilt download); esbuild (tsx)
# comes as its platform package.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY runtime/package.json runtime/
COPY subgraphs/identity/package.json subgraphs/identity/
COPY subgraphs/memory/package.json subgraphs/memory/
COPY subgraphs/coordination/package.json subgraphs/coordination/
COPY subgraphs/catalog/package.json subgraphs/catalog/
COPY gateway/package.json gateway/
COPY codegen/package.json codegen/
COPY bench/package.json bench/
COPY test/package.json test/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
# The services' sources (tests, benchmarks, perf probes and the rest are left out by .dockerignore and by not being
# copied): the runtime, the subgraphs with their migrations, the gateway, the schemas they read at start.
COPY tsconfig.json tsconfig.base.json supergraph.yaml ./
COPY schemas/ schemas/
COPY runtime/ runtime/
COPY subgraphs/ subgraphs/
COPY gateway/ gateway/
COPY scripts/healthcheck.mjs scripts/

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
  AGENTGRAPH_MODE=production \
  HOST=0.0.0.0
WORKDIR /app
# Owned by root, read-only to the service user: a compromised process cannot change the code it runs.
COPY --from=build /app /app
# The node image's unprivileged user (uid 1000).
USER node
EXPOSE 4000 4101 4102 4103 4104
# Liveness (/healthz, no I/O) of the gateway's port; compose.yaml gives each service its own port.
HEALTHCHECK --interval=10s --timeout=10s --start-period=60s --retries=3 CMD ["node", "scripts/healthcheck.mjs"]
CMD ["node", "--import", "tsx", "gateway/src/standalone.ts"]
