// A route whose body fields are all optional (POST .../rotate) takes a request with no
// body at all as `{}`: `curl -X POST` sends none, and GitHub's and Unkey's "regenerate"
// calls need none. Only a request that has no body: no Content-Type and no bytes
// (Fastify then parses nothing and leaves request.body undefined). A body that is there
// is read as every JSON body is: `Content-Type: application/json` with nothing after it
// is still 400 MALFORMED_JSON (the header promises JSON that is not there), and bytes
// without a Content-Type are still 415.
import type { preValidationHookHandler } from 'fastify';

// A callback hook: nothing to wait for.
export const noBodyAsEmptyObject: preValidationHookHandler = (request, _reply, done) => {
  if (request.body === undefined) request.body = {};
  done();
};
