import { chromium, type Browser } from '@playwright/test';

// Debian's chromium, installed by scripts/test.mjs (Playwright downloads no browser here).
const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';

/**
 * Chromium headless as this machine runs it: no sandbox (root), and none of the background
 * networking whose connections the closed network refuses; `extraArgs` on top.
 */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...extraArgs],
  });
}
