import { storable, storableText } from './storable';

describe('storableText', () => {
  it('replaces lone surrogates with U+FFFD and removes NUL characters', () => {
    expect(storableText('a\ud800b')).toBe('a\uFFFDb');
    expect(storableText('a\udc00')).toBe('a\uFFFD');
    expect(storableText('x\u0000y\u0000')).toBe('xy');
  });

  it('keeps surrogate pairs and other text as they are', () => {
    const text = 'emoji 😀, \uFFFE, tab\t';
    expect(storableText(text)).toBe(text);
  });
});

describe('storable', () => {
  it('cleans strings and object keys at every depth', () => {
    const value = { 'k\u0000ey': ['\ud83d', { deep: 'a\u0000b' }], n: 1, ok: true, none: null };
    expect(storable(value)).toEqual({ key: ['\uFFFD', { deep: 'ab' }], n: 1, ok: true, none: null });
    expect(JSON.stringify(storable(value))).not.toMatch(/\\u0000|\\ud8/i);
  });

  it('answers a clean value as the same object, and leaves the input unchanged', () => {
    const clean = { a: ['x', { b: 'y' }], c: 2 };
    expect(storable(clean)).toBe(clean);
    const dirty = { a: ['x', 'bad\u0000'], c: { d: 'fine' } };
    const cleaned = storable(dirty);
    expect(dirty.a[1]).toBe('bad\u0000');
    expect(cleaned.c).toBe(dirty.c);
  });

  it('cleans objects made in another realm (as fetch parses a body) and without a prototype', async () => {
    const { runInNewContext } = await import('node:vm');
    const foreign = runInNewContext('({ text: "a\\ud800", list: [{ k: "\\u0000" }] })') as object;
    expect(storable(foreign)).toEqual({ text: 'a\uFFFD', list: [{ k: '' }] });
    const bare = Object.assign(Object.create(null) as object, { t: '\udc00' });
    expect(storable(bare)).toEqual({ t: '\uFFFD' });
  });

  it('cleans a top-level string and leaves non-JSON objects alone', () => {
    expect(storable('\ud800')).toBe('\uFFFD');
    const date = new Date(0);
    expect(storable({ at: date }).at).toBe(date);
  });
});
