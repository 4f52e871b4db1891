// Preloaded (`node --import`) into a process whose uWebSockets.js addon must not load, as on a runtime
// the build has no binary for or a glibc older than it links against.
const dlopen = process.dlopen.bind(process);
process.dlopen = (module: { exports: unknown }, filename: string, flags?: number) => {
  if (/uws_[a-z0-9]+_[a-z0-9]+_\d+\.node$/.test(filename)) throw new Error(`${filename}: version 'GLIBC_2.38' not found (test preload)`);
  return flags === undefined ? dlopen(module, filename) : dlopen(module, filename, flags);
};
