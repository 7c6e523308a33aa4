// Per-test-file PostgreSQL databases on the harness's server (TEST_DATABASE_URL, set by
// scripts/run-tests.ts or by you). In CI a missing server is a failure, never a skip.
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import pg from 'pg';

export function postgresUrl(): string | undefined {
  const url = process.env.TEST_DATABASE_URL;
  return url !== undefined && url !== '' ? url : undefined;
}

/**
 * The admin URL of the test server, or undefined after marking `t` skipped (outside CI
 * only). Under CI=true a missing server throws.
 */
export function requirePostgres(t?: TestContext): string | undefined {
  const url = postgresUrl();
  if (url !== undefined) return url;
  const why = 'TEST_DATABASE_URL is not set: run the tests with `npm test`, which starts a PostgreSQL server';
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') throw new Error(why);
  t?.skip(`PostgreSQL half skipped: ${why}`);
  return undefined;
}

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A fresh, empty database on the test server. */
export async function createTestDatabase(adminUrl: string): Promise<TestDatabase> {
  const name = `infracat_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
