// A real nginx for the forward-auth end-to-end test: Debian's nginx-light.
import { ensureDebianBinary } from './apt.js';

/** Path of an nginx binary; installs it under CI. Undefined (outside CI) when unavailable. */
export function ensureNginx(): string | undefined {
  return ensureDebianBinary('nginx-light', ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx']);
}
