# Production image: one build, any role (`--role=api`, `--role=realtime`, `--role=worker`, `--role=sfu`).
# Node 20 on Debian 12 (glibc 2.36): the uWebSockets.js build in package.json ships binaries for it.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN MEDIASOUP_WORKER_BIN=built-by-scripts npm ci --no-audit --no-fund
# mediasoup's worker (the SFU of room calls), built against Debian's libraries (scripts/mediasoup-worker.mjs).
COPY scripts ./scripts
RUN XDG_CACHE_HOME=/opt/cache node scripts/mediasoup-worker.mjs && cp /opt/cache/chat-platform/mediasoup-worker-*/mediasoup-worker /app/mediasoup-worker
COPY tsconfig.json ./
COPY main.ts ./
COPY src ./src
COPY rest ./rest
COPY realtime ./realtime
COPY workers ./workers
COPY test ./test
COPY bench ./bench
RUN npx tsc -b && npm prune --omit=dev

FROM node:20-bookworm-slim
# ffmpeg for the media worker (video to MP4), tini to forward SIGTERM for graceful shutdown, and the
# shared libraries mediasoup's worker links against.
RUN apt-get update && apt-get install -y --no-install-recommends ffmpeg tini ca-certificates \
      libuv1 libsrtp2-1 libusrsctp2 libabsl20220623 libflatbuffers2 libssl3 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 MEDIASOUP_WORKER_BIN=/app/mediasoup-worker
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/mediasoup-worker ./mediasoup-worker
USER node
EXPOSE 8080 8081 8082
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--enable-source-maps", "dist/main.js"]
CMD ["--role=all"]
