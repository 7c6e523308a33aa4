// `npm run gen:client`: regenerates the TypeScript types of the API from the OpenAPI
// document the service serves, into packages/client/src/openapi.ts: the published
// @infracat/client's (a .ts file so its build emits the declarations into the package),
// which the console (web/src/api.ts) and test/client import too.
// packages/client/test/client.test.ts fails when the committed file and the served
// document differ, so the types never drift.
import { writeFileSync } from 'node:fs';
import { openApiTypes } from '../test/client/generate.js';

const out = new URL('../packages/client/src/openapi.ts', import.meta.url);
writeFileSync(out, await openApiTypes());
process.stdout.write(`wrote ${out.pathname}\n`);
