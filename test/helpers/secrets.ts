// Looking for a secret in text that left the service: plain, or behind any number of
// percent-encodings (what a reader or a tool may decode). Shared by the redaction tests.

/** The text and each successive percent-decoding of it. */
export function decodings(text: string): string[] {
  const out = [text];
  for (let t = text, i = 0; i < 8; i++) {
    const next = t.replace(/%([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    if (next === t) break;
    out.push(next);
    t = next;
  }
  return out;
}

/** A 12-character piece of the secret's random part readable in the text, decoded or not; or undefined. */
export function secretPieceIn(text: string, secret: string): string | undefined {
  const random = secret.slice(secret.indexOf('_') + 1);
  for (const view of decodings(text)) {
    for (let i = 0; i + 12 <= random.length; i++) if (view.includes(random.slice(i, i + 12))) return view;
  }
  return undefined;
}
