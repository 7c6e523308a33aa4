// A forward-auth check ignores the request body, but a gateway may forward the client's
// (nginx unless proxy_pass_request_body off, Traefik with forwardBody, Envoy with
// with_request_body). It is read and dropped, counting bytes, so a body past the app's
// limit is refused (413) like everywhere else instead of being drained to its end.
import type { Readable } from 'node:stream';
import { AppError } from '../errors.js';

export function discardBody(stream: Readable, contentLength: string | undefined, limit: number): Promise<void> {
  const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', `request bodies are limited to ${limit} bytes`);
  return new Promise((resolve, reject) => {
    if (contentLength !== undefined && Number(contentLength) > limit) {
      reject(tooLarge());
      return;
    }
    if (stream.readableEnded) {
      resolve();
      return;
    }
    let received = 0;
    const stop = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    function onData(chunk: Buffer | string) {
      received += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
      if (received > limit) {
        stop();
        // Stop reading: the answer closes the connection (Connection: close), and the
        // rest of the body is never read.
        stream.pause();
        reject(tooLarge());
      }
    }
    function onEnd() {
      stop();
      resolve();
    }
    function onError() {
      // The client went away mid-body: nobody reads the answer, but it is not a 500.
      stop();
      reject(new AppError('BAD_REQUEST', 'the request body was cut off'));
    }
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.resume();
  });
}
