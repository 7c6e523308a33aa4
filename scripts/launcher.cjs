#!/usr/bin/env node
// The `infracat` command as built: scripts/bundle.mjs copies this file to dist/cli/main.js,
// beside the bundle of the whole program (dist/cli/infracat.cjs), and marks dist/cli/ as
// CommonJS (its own package.json).
//
// Why CommonJS: an ES module entry point makes Node 20 start its ES module loader (a dozen
// more of its own modules, and file reads through fs/promises and streams) before a line of
// ours runs: 12 ms of each start here, a sixth of what Node itself takes (BENCHMARKS.md
// "Start-up, session 15").
//
// Why a launcher: compiling the 3 MB bundle was a fifth of a cold start, and Node 20 keeps
// no compiled code between runs of an ES module (module.enableCompileCache() arrives in
// Node 22). So the bundle is a CommonJS function compiled here with V8's code cache,
// dist/cli/infracat.cjs.cache: the bytecode of every function a run compiled, written at
// the end of a run that found none (the build writes it with one start and stop of the
// server, scripts/bundle.mjs). V8 refuses a cache from another Node version or other V8
// flags; the run then compiles as without one and writes a new cache at its end. A cache
// that cannot be written (a read-only installation) only costs that speed.
'use strict';
const { createHook } = require('node:async_hooks');
const { readFileSync, renameSync, rmSync, writeFileSync } = require('node:fs');
const { createRequire } = require('node:module');
const path = require('node:path');
const vm = require('node:vm');

// One of Node's tick objects (what process.nextTick() queues), kept alive for the life of the
// process, first thing. Why: V8 remembers the hidden classes ("maps") that nextTick()'s object
// literal `{ [async_id_symbol], [trigger_async_id_symbol], callback, args }` gives its objects,
// and holds them weakly. A full collection that runs while no tick object is alive (start-up
// has several; V8's idle-time collection is another) lets them die; the next tick object
// gets new ones, and V8 then marks the literal's property definitions megamorphic for good:
// from then on every nextTick() call (several per HTTP request, in Node's own stream and
// socket code) defines its properties through a slow runtime call. One live tick object
// keeps those maps, so the literal stays monomorphic. The only public way to reach a tick
// object is an async hook's init: enabled for this one call, then disabled, so nothing is
// left running. Measured, and the test that shows the literal's state: BENCHMARKS.md "The
// tick object's hidden classes", test/cli/launcher.test.ts.
// Held by this module's exports, which Node's module cache keeps for the life of the process.
// A variable of this file alone dies with the file's scope once the bundle has started, when
// nothing else refers to it (as when the code cache is taken: no exit listener is left), and
// the maps die with it (BENCHMARKS.md, "Start-up, session 17").
const keptTick = [];
module.exports = { keptTick };
const tickHook = createHook({
  init(_id, type, _trigger, resource) {
    if (type === 'TickObject') keptTick.push(resource);
  },
});
tickHook.enable();
process.nextTick(() => {});
tickHook.disable();

const bundle = path.join(__dirname, 'infracat.cjs');
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
  // Read as Latin-1: the bundle is ASCII (scripts/lib/bundle.mjs escapes anything else;
  // test/build/bundle.test.ts), for which Latin-1 and UTF-8 read the same text, and Latin-1
  // is a plain copy where UTF-8 is decoded: 2-3 ms of each start for 3 MB here.
  const script = new vm.Script(readFileSync(bundle, 'latin1'), { filename: bundle, cachedData });
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

const bundleModule = { exports: {} };
compile().runInThisContext()(bundleModule.exports, createRequire(bundle), bundleModule, bundle, path.dirname(bundle));
