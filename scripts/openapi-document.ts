// `npm run lint:openapi`: writes the document a freshly built app serves at
// /api/v1/openapi.json to the file named by the first argument (default
// openapi.json in the working directory), for `redocly lint` and other tools.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { servedDocument } from '../test/client/generate.js';

const out = resolve(process.argv[2] ?? 'openapi.json');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(await servedDocument(), null, 2)}\n`);
process.stdout.write(`wrote ${out}\n`);
