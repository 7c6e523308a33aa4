// Module customization hooks (module.register) that post the URL of every module loaded from
// then on to the port given as `data.port`: a test can see that a module loads at a given
// moment, hence not before (test/catalog/lazy-file.test.ts).
let port;

export function initialize(data) {
  port = data.port;
}

export async function load(url, context, nextLoad) {
  port.postMessage(url);
  return nextLoad(url, context);
}
