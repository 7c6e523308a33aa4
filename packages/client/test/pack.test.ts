// The package as it ships: `npm pack` builds it (prepack: tsc) into a tarball that installs
// into an empty folder without a registry (it has no runtime dependencies), type-checks a
// consumer against its declarations, and is imported and used against a live server.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { tempDir } from '../../../test/helpers/sqlite.js';
import { build, mintToken } from '../../../test/helpers/app.js';

const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const TSC = fileURLToPath(new URL('../../../node_modules/typescript/bin/tsc', import.meta.url));

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const CONSUMER = `import { createClient, InfracatError } from '@infracat/client';
const api = createClient({ baseUrl: process.env.BASE_URL!, token: process.env.TOKEN! });
const current = await api.GET('/api/v1/api-tokens/current');
const names: string[] = [];
for await (const token of api.paginate('/api/v1/api-tokens', { query: { per_page: 1 } })) names.push(token.name);
let code = '';
try {
  await api.GET('/api/v1/api-tokens/{id}', { path: { id: 'tok_missing' } });
} catch (err) {
  if (err instanceof InfracatError) code = err.code;
}
console.log(JSON.stringify({ id: current.data.id, names, code }));
`;

describe('@infracat/client as packed', () => {
  it('npm pack gives a tarball that installs offline, type-checks and works against a live server', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const out = path.join(tmp.dir, 'pack');
    mkdirSync(out);
    const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', out], PACKAGE)) as {
      filename: string;
      files: { path: string }[];
    }[];
    const files = packed[0]!.files.map((f) => f.path).sort();
    assert.deepEqual(files, [
      'README.md',
      'dist/index.d.ts',
      'dist/index.js',
      'dist/openapi.d.ts',
      'dist/openapi.js',
      'package.json',
    ]);

    const app = path.join(tmp.dir, 'consumer');
    mkdirSync(app);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(out, packed[0]!.filename)], app);

    writeFileSync(path.join(app, 'use.ts'), CONSUMER);
    writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          types: [],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          outDir: 'out',
        },
        files: ['use.ts', 'env.d.ts'],
      }),
    );
    writeFileSync(path.join(app, 'env.d.ts'), 'declare const process: { env: Record<string, string | undefined> };\n');
    run(process.execPath, [TSC, '-p', 'tsconfig.json'], app);

    const { app: server } = await build(t);
    const admin = await mintToken(server, ['api-tokens:write'], 'admin');
    await mintToken(server, ['api-tokens:read'], 'second');
    await server.listen({ port: 0, host: '127.0.0.1' });
    const { port } = server.server.address() as { port: number };
    const env = { ...process.env, BASE_URL: `http://127.0.0.1:${port}`, TOKEN: admin.secret };
    // Asynchronous: the server answers in this process while the consumer runs.
    const child = spawn(process.execPath, [path.join(app, 'out', 'use.js')], { cwd: app, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), { id: admin.id, names: ['admin', 'second'], code: 'NOT_FOUND' });
  });
});
