#!/usr/bin/env node
// The `infracat` command as built: scripts/bundle.mjs copies this file to dist/cli/main.js,
// beside the bundle of the whole program (dist/cli/infracat.cjs).
//
// Why a launcher: compiling the 3 MB bundle was a fifth of a cold start, and Node 20 keeps
// no compiled code between runs of an ES module (module.enableCompileCache() arrives in
// Node 22). So the bundle is a CommonJS function compiled here with V8's code cache,
// dist/cli/infracat.cjs.cache: the bytecode of every function a run compiled, written at
// the end of a run that found none (the build writes it with one start and stop of the
// server, scripts/bundle.mjs). V8 refuses a cache from another Node version or other V8
// flags; the run then compiles as without one and writes a new cache at its end. A cache
// that cannot be written (a read-only installation) only costs that speed.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const bundle = fileURLToPath(new URL('./infracat.cjs', import.meta.url));
const cacheFile = `${bundle}.cache`;

/** The bundle compiled, from the cache when V8 accepts it (its buffer is garbage after). */
function compile() {
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    // none yet
  }
  // The bundle is one function expression taking what Node passes a CommonJS module.
  // No import() in it: a script gets one on Node 20 only as an experimental feature (the
  // build refuses a bundle with one).
  const script = new vm.Script(readFileSync(bundle, 'utf8'), { filename: bundle, cachedData });
  if (cachedData === undefined || script.cachedDataRejected) process.once('exit', () => writeCache(script));
  return script;
}

function writeCache(script) {
  // Whole or not at all: processes starting meanwhile read the old file or the new one.
  const partial = `${cacheFile}.${process.pid}`;
  try {
    writeFileSync(partial, script.createCachedData());
    renameSync(partial, cacheFile);
  } catch {
    // Read-only: the next start compiles again.
    try {
      rmSync(partial, { force: true });
    } catch {
      // nothing was written
    }
  }
}

const module = { exports: {} };
compile().runInThisContext()(module.exports, createRequire(bundle), module, bundle, path.dirname(bundle));
