// HTTP/1.1 requests written byte for byte on a socket: header names in any case, a header
// repeated, values no client library would send. For the gateway spoofing suites, where
// app.inject() and fetch() would normalise exactly what is under test.
import net from 'node:net';

export interface RawResponse {
  status: number;
  /** Lowercased names; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

/** One request (`Connection: close` is added); resolves with the parsed answer. */
export function rawRequest(
  port: number,
  method: string,
  target: string,
  headers: readonly (readonly [string, string])[],
  body = '',
): Promise<RawResponse> {
  const lines = [
    `${method} ${target} HTTP/1.1`,
    'Host: 127.0.0.1',
    ...headers.map(([n, v]) => `${n}: ${v}`),
    'Connection: close',
  ];
  if (body !== '') lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  const request = `${lines.join('\r\n')}\r\n\r\n${body}`;
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.setTimeout(15_000, () => socket.destroy(new Error('no answer')));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = (split === -1 ? text : text.slice(0, split)).split('\r\n');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '');
      if (status === null) {
        reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
        return;
      }
      const parsed: Record<string, string> = {};
      for (const line of head.slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) parsed[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(status[1]), headers: parsed, body: split === -1 ? '' : text.slice(split + 4) });
    });
    // Not end(): nginx takes a half-closed connection for a client that gave up (499).
    socket.write(request);
  });
}
