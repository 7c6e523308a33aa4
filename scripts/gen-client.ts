// `npm run gen:client`: regenerates web/src/openapi.d.ts (TypeScript types of the API,
// used by the console and by test/client) from the OpenAPI document the service serves.
// test/client/client.test.ts fails when
// the committed file and the served document differ, so the types never drift.
import { writeFileSync } from 'node:fs';
import { openApiTypes } from '../test/client/generate.js';

const out = new URL('../web/src/openapi.d.ts', import.meta.url);
writeFileSync(out, await openApiTypes());
process.stdout.write(`wrote ${out.pathname}\n`);
