// A tiny element builder. Everything the console shows is built with createElement and
// text nodes, never HTML strings: the page's CSP enforces Trusted Types with no policy,
// so any innerHTML assignment would throw, and user data (token names) can never be markup.

export type Child = Node | string | number | null | undefined | false | readonly Child[];
type AttrValue = string | number | boolean | null | undefined;
type Handler = (event: Event) => void;
export type Attrs = Record<string, AttrValue | Handler>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) el.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined) el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child as readonly Child[]);
    else
      parent.appendChild(
        typeof child === 'string' || typeof child === 'number'
          ? document.createTextNode(String(child))
          : (child as Node),
      );
  }
}

/** Replaces an element's content. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

let statusTimer: number | undefined;

/** Says something to screen readers (and shows it briefly in the visible status line). */
export function announce(message: string): void {
  const region = document.getElementById('status');
  if (region === null) return;
  // Cleared first so the same message twice is announced twice.
  region.textContent = '';
  window.clearTimeout(statusTimer);
  statusTimer = window.setTimeout(() => {
    region.textContent = message;
  }, 50);
}

/** Moves focus to an element that is not normally focusable (a heading, a panel). */
export function focusOn(el: HTMLElement): void {
  if (!el.hasAttribute('tabindex')) el.setAttribute('tabindex', '-1');
  el.focus();
}
