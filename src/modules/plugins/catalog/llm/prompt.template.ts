const PLACEHOLDER = /\{\{\s*([^{}\s]+)\s*\}\}/g;

/**
 * Fills `{{path.to.field}}` placeholders from `input` (numeric segments index arrays);
 * `{{input}}` is the whole input. Strings render as they are, other values as JSON, and a
 * missing path as nothing.
 */
export function renderPrompt(template: string, input: unknown): string {
  return template.replace(PLACEHOLDER, (_match, path: string) => render(path === 'input' ? input : lookup(input, path.split('.'))));
}

function lookup(value: unknown, segments: string[]): unknown {
  let current = value;
  for (const segment of segments) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

function render(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
