// `npm run gen:client`: regenerates the TypeScript types of the API from the OpenAPI
// document the service serves: web/src/openapi.d.ts (used by the console and by
// test/client) and packages/client/src/openapi.ts (the published @infracat/client's; a .ts
// file so its build emits the declarations into the package). test/client/client.test.ts
// and packages/client/test/client.test.ts fail when a committed file and the served
// document differ, so the types never drift.
import { writeFileSync } from 'node:fs';
import { openApiTypes } from '../test/client/generate.js';

const types = await openApiTypes();
for (const file of ['../web/src/openapi.d.ts', '../packages/client/src/openapi.ts']) {
  const out = new URL(file, import.meta.url);
  writeFileSync(out, types);
  process.stdout.write(`wrote ${out.pathname}\n`);
}
