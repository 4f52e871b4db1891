# Production image: one build, any role (`--role=api`, `--role=realtime`, `--role=worker`).
# Node 20 on Debian 12 (glibc 2.36): the uWebSockets.js build in package.json ships binaries for it.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
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
# ffmpeg for the media worker (video to MP4), tini to forward SIGTERM for graceful shutdown.
RUN apt-get update && apt-get install -y --no-install-recommends ffmpeg tini ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 8080 8081
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--enable-source-maps", "dist/main.js"]
CMD ["--role=all"]
