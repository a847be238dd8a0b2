/**
 * What PostgreSQL's jsonb (and text) cannot hold: U+0000, and UTF-16 surrogates without their
 * pair (JSON.stringify writes them as `\u0000` and `\ud800`, which jsonb refuses). Data from
 * outside (a plugin's result, a model's reply) goes through `storable` before it is recorded.
 */

declare global {
  // ES2024 (Node 20+); the project's lib is ES2023.
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/** `text` as it can be stored: lone surrogates replaced with U+FFFD, NUL characters removed. */
export function storableText(text: string): string {
  if (text.isWellFormed() && !text.includes('\u0000')) return text;
  return text.toWellFormed().replaceAll('\u0000', '');
}

/**
 * A JSON value as it can be stored: every string and object key through `storableText`, at
 * every depth. What needs no change is answered as it is (the same object), so a clean value
 * costs one walk and no copy. Two keys that become equal keep the later one's value. Values
 * that are not plain JSON containers (a Date, a Buffer) are left alone.
 */
export function storable<T>(value: T): T {
  return clean(value) as T;
}

function clean(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const cleaned = clean(item);
      if (cleaned !== item) (copy ??= value.slice())[i] = cleaned;
    }
    return copy ?? value;
  }
  if (isPlainObject(value)) {
    let changed = false;
    const entries = Object.entries(value).map(([key, item]) => {
      const cleanKey = storableText(key);
      const cleaned = clean(item);
      if (cleanKey !== key || cleaned !== item) changed = true;
      return [cleanKey, cleaned] as const;
    });
    return changed ? Object.fromEntries(entries) : value;
  }
  return value;
}

/** An object literal's kind, of any realm (a body parsed by fetch's Response.json() comes from Node's own). */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto === null || Object.getPrototypeOf(proto) === null;
}
