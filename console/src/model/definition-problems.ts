import { Validator, type OutputUnit } from '@cfworker/json-schema';
import { findNodeAtLocation, parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';

/** A problem of the definition being edited, where it is in the text, and who found it. */
export interface PlacedProblem {
  /** The path as the API names it: `steps[0].retry.maxAttempts`; empty for the whole definition. */
  path: string;
  message: string;
  from: number;
  to: number;
  source: 'syntax' | 'schema' | 'server';
}

type Segment = string | number;

/** `steps[0].retry.maxAttempts` (the API's paths) or `#/steps/0/retry` (a JSON Pointer) as segments. */
export function pathSegments(path: string): Segment[] {
  if (path.startsWith('#') || path.startsWith('/')) {
    return path
      .replace(/^#/, '')
      .split('/')
      .filter((part) => part !== '')
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
  }
  const segments: Segment[] = [];
  for (const match of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) segments.push(match[2] !== undefined ? Number(match[2]) : match[1]);
  return segments;
}

/** The API's spelling of segments: `steps[0].retry`. */
export function apiPath(segments: Segment[]): string {
  return segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}

/**
 * Where a path is in the text: the key of the property it names, or the element, or (for a
 * path the text no longer has) the nearest part of it that is there; the first character for
 * the whole document or an object or array that stands for a missing part.
 */
export function locate(root: Node | undefined, segments: Segment[]): { from: number; to: number } {
  if (!root) return { from: 0, to: 0 };
  for (let length = segments.length; length >= 0; length--) {
    const node = findNodeAtLocation(root, segments.slice(0, length));
    if (!node) continue;
    const exact = length === segments.length;
    const key = node.parent?.type === 'property' ? node.parent.children?.[0] : undefined;
    if (key && length > 0) return { from: key.offset, to: key.offset + key.length };
    if (exact && node.type !== 'object' && node.type !== 'array') return { from: node.offset, to: node.offset + node.length };
    return { from: node.offset, to: node.offset + 1 };
  }
  return { from: 0, to: 0 };
}

/** The text parsed: its value and tree, or its syntax errors placed. */
export function parseDefinition(text: string): { value: unknown; root: Node | undefined; problems: PlacedProblem[] } {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: false, disallowComments: true });
  const problems = errors.map((e) => ({
    path: '',
    message: `JSON: ${printParseErrorCode(e.error)}`,
    from: e.offset,
    to: e.offset + Math.max(e.length, 1),
    source: 'syntax' as const,
  }));
  if (problems.length || !root) return { value: undefined, root, problems };
  return { value: JSON.parse(text) as unknown, root, problems };
}

/**
 * A validator of definitions against the JSON Schema the API answers (no code generation, so
 * it runs under the console's content security policy).
 */
export function definitionValidator(schema: object): (value: unknown, root: Node | undefined) => PlacedProblem[] {
  const validator = new Validator(schema as never, '7', false);
  return (value, root) => {
    const seen = new Set<string>();
    const problems: PlacedProblem[] = [];
    for (const unit of validator.validate(value).errors) {
      const problem = schemaProblem(unit);
      if (!problem) continue;
      const segments = pathSegments(unit.instanceLocation);
      const path = apiPath(segments);
      if (seen.has(`${path}\n${problem}`)) continue;
      seen.add(`${path}\n${problem}`);
      problems.push({ path, message: problem, ...locate(root, segments), source: 'schema' });
    }
    return problems;
  };
}

/** Keywords that only say a part below failed: the part's own error says what. */
const ENCLOSING = new Set(['properties', 'items', 'prefixItems', 'additionalProperties', 'allOf', '$ref', 'patternProperties']);

/** A validator's error in words for the editor, or null for an error that only encloses a deeper one. */
function schemaProblem(unit: OutputUnit): string | null {
  if (ENCLOSING.has(unit.keyword)) return null;
  // additionalProperties: false marks the field itself with a "false" schema.
  if (unit.keyword === 'false') return 'is not a field here';
  return unit.error.replace(/^Instance /, '').replace(/\.$/, '');
}

/** Problems the server answered (WORKFLOW_INVALID's details), placed in the text as it is now. */
export function placeServerProblems(details: Array<{ path?: string; message: string }>, root: Node | undefined): PlacedProblem[] {
  return details.map((d) => ({ path: d.path ?? '', message: d.message, ...locate(root, pathSegments(d.path ?? '')), source: 'server' }));
}
