'use strict';
// What the bundle gives Fastify's plugin version check (fastify/lib/plugin-utils.js) for
// require('semver'): the three functions it calls, with semver itself loaded at first need.
//
// Why: at every start Fastify asks satisfies('5.12.8', '5.x') for each plugin that names its
// Fastify range (@fastify/cors, @fastify/swagger). Answering that through semver evaluated
// ~20 of its modules and ran a dozen of its patterns for the first time: 3-5 ms of a start
// (BENCHMARKS.md, "Start-up, session 17"). A release version against a plain major range
// ("5.x") is answered here, exactly as semver answers it (test/build/lazy-requires.test.ts
// compares the two); anything else goes to semver.
let semver;
const load = () =>
  (semver ??= {
    satisfies: require('semver/functions/satisfies'),
    gt: require('semver/functions/gt'),
    coerce: require('semver/functions/coerce'),
  });

// semver's numeric identifier (no leading zero), kept well inside exact integers.
const NUMBER = '(0|[1-9]\\d{0,14})';
const RELEASE = new RegExp(`^${NUMBER}\\.${NUMBER}\\.${NUMBER}$`);
const MAJOR_RANGE = new RegExp(`^${NUMBER}\\.x$`);

module.exports = {
  satisfies(version, range, options) {
    const release = typeof version === 'string' ? RELEASE.exec(version) : null;
    const major = typeof range === 'string' ? MAJOR_RANGE.exec(range) : null;
    // "N.x" is ">=N.0.0 <N+1.0.0-0": a release (no pre-release part) is in it when its major is N.
    if (release !== null && major !== null) return release[1] === major[1];
    return load().satisfies(version, range, options);
  },
  gt: (a, b, loose) => load().gt(a, b, loose),
  coerce: (version, options) => load().coerce(version, options),
};
