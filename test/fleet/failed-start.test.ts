// An instance is in the fleet only while it serves: a start that fails (its port taken)
// never counts as an instance, so the healthy ones keep their share of the rate limits;
// a stop takes the row with it. Real processes (`infracat serve`) on each backend.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backends } from '../helpers/backends.js';
import { runCli, serve } from '../helpers/process.js';
import { parseExposition, value } from '../helpers/prometheus.js';
import { rawSql } from '../helpers/raw-sql.js';

for (const backend of backends()) {
  describe(`fleet membership of failed and stopped starts (${backend.name})`, () => {
    it(
      'a second start on a taken port exits non-zero and leaves only the healthy instance registered; ' +
        "the healthy one's share is unchanged; a stop deregisters",
      async (t) => {
        const db = await backend.fresh(t);
        const instances = async () =>
          ((await rawSql(backend, db, 'SELECT id FROM instances')) as { id: string }[]).map((r) => r.id);
        const { child: healthy, url } = await serve({
          DATABASE_URL: db.url,
          INSTANCE_HEARTBEAT_MS: '200',
          RATE_LIMIT_ANONYMOUS: '10',
        });
        t.after(() => healthy.proc.kill('SIGKILL'));
        const registered = JSON.parse(await healthy.waitFor(/"msg":"instance registered"/)) as { instance: string };
        assert.deepEqual(await instances(), [registered.instance]);

        const port = new URL(url).port;
        const second = runCli(['serve'], { env: { DATABASE_URL: db.url, PORT: port, LOG_LEVEL: 'info' } });
        t.after(() => second.proc.kill('SIGKILL'));
        let timer: NodeJS.Timeout | undefined;
        const { code } = await Promise.race([
          second.exited,
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`the failed start is still running:\n${second.stdout.join('\n')}`)),
              20_000,
            );
          }),
        ]).finally(() => clearTimeout(timer));
        assert.notEqual(code, 0, second.stderr.join('\n'));
        assert.match(second.stderr.join('\n'), /the port is already in use/);
        assert.deepEqual(await instances(), [registered.instance], 'only the healthy instance is registered');
        assert.ok(
          !second.stdout.some((l) => l.includes('"msg":"instance registered"')),
          'the failed start never registered',
        );

        // The healthy one's heartbeats after the failed start still count it alone.
        const exitedAt = Date.now();
        const metrics = async () => parseExposition(await (await fetch(`${url}/metrics`)).text());
        const beatSince = async () => {
          const age = value(await metrics(), 'infracat_fleet_heartbeat_age_seconds')!;
          return age >= 0 && Date.now() - age * 1000 > exitedAt;
        };
        let beat = false;
        while (!beat) beat = await beatSince();
        assert.equal(value(await metrics(), 'infracat_fleet_instances'), 1);
        assert.ok(
          !healthy.stdout.some((l) => l.includes('live instances changed')),
          'the healthy instance never split its limits',
        );
        const answer = await fetch(`${url}/api/v1/plans`);
        assert.equal(answer.headers.get('ratelimit-policy'), '"anonymous";q=10;w=60');
        assert.match(String(answer.headers.get('ratelimit')), /^"anonymous";r=9;/, 'the whole limit, not half');

        healthy.proc.kill('SIGTERM');
        assert.equal((await healthy.exited).code, 0);
        assert.deepEqual(await instances(), [], 'a stopped instance deregisters');
      },
    );
  });
}
