# syntax=docker/dockerfile:1

# The Platform: build with the full toolchain, ship only the compiled code and the
# production dependencies. The `node` devDependency (the pinned Node 24 that npm scripts use
# on developer machines) is pruned; the runtime image runs on its own Node 24.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json nest-cli.json ormconfig.ts ./
COPY scripts/build-if-stale.mjs scripts/build-console.mjs ./scripts/
COPY src ./src
# The web console (built with Vite into dist/console, served at /console) and the typed client it calls the API with.
COPY console ./console
COPY clients/typescript/src ./clients/typescript/src
# The vendor's license tool (src/license-issue.ts) is not compiled (tsconfig.build.json) and its
# npm script is dropped: an installation verifies licenses, it never signs them.
RUN npm run build && npm prune --omit=dev && npm pkg delete 'scripts.license:issue'

FROM node:24-slim AS runtime
ENV NODE_ENV=production
# Every interface: the container's port is what gets published (the service's own default is loopback).
ENV HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Only used when the image runs without DATABASE_URL outside production (embedded PGlite).
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/live', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/src/main.js"]
