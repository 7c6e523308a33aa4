// The shipped systemd unit (deploy/infracat.service) is valid and hardened: checked with
// systemd's own tools (Debian package `systemd`; installed under CI when missing).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ensureDebianBinary } from '../helpers/apt.js';

const UNIT = path.resolve(import.meta.dirname, '../../deploy/infracat.service');

describe('deploy/infracat.service', () => {
  it('passes systemd-analyze verify without a single warning', (t) => {
    const analyze = ensureDebianBinary('systemd', ['/usr/bin/systemd-analyze', '/bin/systemd-analyze']);
    if (analyze === undefined) return t.skip('systemd-analyze is not installed (apt-get install systemd)');
    const res = spawnSync(analyze, ['verify', UNIT], { encoding: 'utf8' });
    assert.equal(res.status, 0, res.stderr);
    // verify exits 0 on unknown keys and bad values ("ignoring"): any output is a defect.
    assert.equal(res.stderr.trim(), '', res.stderr);
  });

  it('is hardened: a dedicated user, its own state directory, a read-only system, no privileges', (t) => {
    const text = readFileSync(UNIT, 'utf8');
    const directives = new Map<string, string[]>();
    for (const line of text.split('\n')) {
      const m = /^([A-Za-z]+)=(.*)$/.exec(line);
      if (m !== null) directives.set(m[1]!, [...(directives.get(m[1]!) ?? []), m[2]!]);
    }
    const one = (k: string) => directives.get(k)?.at(-1);
    assert.ok(one('DynamicUser') === 'yes' || one('User') !== undefined, 'a dedicated user');
    assert.equal(one('StateDirectory'), 'infracat');
    assert.equal(one('StateDirectoryMode'), '0700');
    assert.equal(one('ProtectSystem'), 'strict');
    assert.equal(one('NoNewPrivileges'), 'yes');
    assert.equal(one('CapabilityBoundingSet'), '');
    assert.match(one('EnvironmentFile') ?? '', /infracat\.env$/);
    assert.match(one('ExecStart') ?? '', /dist\/cli\/main\.js serve$/);
    assert.match(
      one('Environment') !== undefined ? directives.get('Environment')!.join(' ') : '',
      /DATABASE_URL=sqlite:\/var\/lib\/infracat\//,
      'the database lives in the state directory',
    );
    assert.equal(one('RestartPreventExitStatus'), '78', 'a bad setting does not restart in a loop');

    const analyze = ensureDebianBinary('systemd', ['/usr/bin/systemd-analyze', '/bin/systemd-analyze']);
    if (analyze === undefined) return t.skip('systemd-analyze is not installed (apt-get install systemd)');
    const res = spawnSync(analyze, ['security', '--offline=true', '--no-pager', UNIT], { encoding: 'utf8' });
    const exposure = /Overall exposure level for infracat\.service: ([\d.]+)/.exec(res.stdout);
    assert.ok(exposure !== null, res.stdout + res.stderr);
    assert.ok(Number(exposure[1]) <= 2, `systemd rates the exposure ${exposure[1]} (at most 2.0 is "OK")`);
  });
});
