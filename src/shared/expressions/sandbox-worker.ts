import jsonata from 'jsonata';
import { LRUCache } from 'lru-cache';
import { RE2JS } from 're2js';

/**
 * The inside of the expression sandbox: one of these runs in each worker thread of the pool
 * (`ExpressionSandbox`), evaluates one JSONata expression at a time and answers with JSON
 * text. Node loads this file itself (type-stripped under ts-node and jest, compiled in
 * `dist`), so it imports packages only, and everything the thread runs is here: the bounded
 * JSONata and the linear-time regular expressions (which the API thread uses too, through
 * `linear-regex.ts`).
 *
 * Bounds that hold inside a thread, before the pool's own (a wall-clock kill and a heap
 * limit, which can only end the thread):
 * - JSONata's `timeout` and `stack` guards, checked between nodes;
 * - ranges (`[1..n]`) of at most MAX_ITEMS (JSONata's `sequence` option);
 * - no node may produce an array over MAX_ITEMS items or a string over MAX_STRING_CHARS
 *   (checked as each node ends), and the built-ins that allocate by an argument rather than by
 *   their input (`$pad`'s width, `$join` and `$string` of many references to one big value)
 *   check the size before they allocate: a single allocation bigger than what is left of a
 *   thread's heap would take the whole process down, not just the thread;
 * - regular expressions run on RE2 (linear time);
 * - the result is measured before it is serialized, and refused over `maxOutputBytes`.
 */

/**
 * JSONata's `stack`: frames of evaluation in flight, including the siblings of an array or
 * object constructor (evaluated concurrently: a 200-key object peaks at ~400), so it is set
 * well above what wide mappings reach. Non-tail recursion costs ~3 frames a level.
 */
const MAX_DEPTH = 2000;
const MAX_ITEMS = 1_000_000;
const MAX_STRING_CHARS = 4_000_000;
const COMPILED_CACHE_SIZE = 500;

export interface EvaluationTask {
  expression: string;
  input: unknown;
  bindings?: Record<string, unknown>;
  /** JSONata's own bound, checked between nodes; the pool kills the thread a little later. */
  timeoutMs: number;
  maxOutputBytes: number;
  /**
   * Shared with the pool's watchdog: the thread writes `clock[slot]` when it takes the task up
   * (ms since the epoch), so the time limit counts from there, not from when it was queued.
   */
  clock?: BigInt64Array;
  slot?: number;
}

export type EvaluationAnswer =
  { ok: true; json: string } | { ok: false; code: 'EXPRESSION_FAILED' | 'EXPRESSION_TIMEOUT'; message: string };

/** A limit of the sandbox, thrown as JSONata throws its own errors. */
class LimitExceeded {
  readonly code = 'LIMIT';
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

const EXIT_HOOK = Symbol.for('jsonata.__evaluate_exit');
const compiledCache = new LRUCache<string, jsonata.Expression>({ max: COMPILED_CACHE_SIZE });

/** Evaluates one task; never throws (a thread that dies is the pool's to report). */
export default async function evaluate(task: EvaluationTask): Promise<EvaluationAnswer> {
  if (task.clock && task.slot !== undefined) Atomics.store(task.clock, task.slot, BigInt(Date.now()));
  let expression: jsonata.Expression;
  try {
    expression = compiled(task.expression, task.timeoutMs);
  } catch (error) {
    return failed(`Invalid expression: ${describeFailure(error)}`);
  }
  try {
    const result = (await expression.evaluate(task.input, task.bindings)) as unknown;
    return serialize(result, task.maxOutputBytes);
  } catch (error) {
    const failure = innermost(error);
    if (failure.code === 'D1012') return { ok: false, code: 'EXPRESSION_TIMEOUT', message: timeoutMessage(task.timeoutMs) };
    if (failure.code === 'D1011') return failed(`Expression nested too deep (over ${MAX_DEPTH} frames): ${describeFailure(error)}`);
    return failed(`Expression failed: ${describeFailure(error)}`);
  }
}

export function timeoutMessage(timeoutMs: number): string {
  return `Expression did not finish within ${timeoutMs} ms (the time limit of one evaluation)`;
}

/** Compiles with every bound in place; compiled expressions are kept per text and timeout. */
function compiled(text: string, timeoutMs: number): jsonata.Expression {
  const key = `${timeoutMs}:${text}`;
  let expression = compiledCache.get(key);
  if (expression) return expression;
  expression = jsonata(text, {
    timeout: timeoutMs,
    stack: MAX_DEPTH,
    sequence: MAX_ITEMS,
    RegexEngine: LinearRegExp as unknown as RegExpConstructor,
  });
  bound(expression);
  compiledCache.set(key, expression);
  return expression;
}

type Builtin = (...args: unknown[]) => unknown;
let builtins: Promise<Record<string, Builtin>> | undefined;

/** JSONata's own implementation of a built-in the sandbox wraps, taken once per thread. */
async function builtin(name: 'pad' | 'join' | 'string'): Promise<Builtin> {
  builtins ??= jsonata('{ "pad": $pad, "join": $join, "string": $string }')
    .evaluate(null)
    .then((found: Record<string, { implementation: Builtin }>) =>
      Object.fromEntries(Object.entries(found).map(([key, fn]) => [key, fn.implementation])),
    );
  return (await builtins)[name];
}

function bound(expression: jsonata.Expression): void {
  (expression as unknown as { assign(name: symbol, value: unknown): void }).assign(EXIT_HOOK, checkSize);
  expression.registerFunction(
    'pad',
    async (text: string | undefined, width: number, char?: string) => {
      if (Math.abs(width) > MAX_STRING_CHARS)
        throw new LimitExceeded(`$pad width ${width} is over the limit of ${MAX_STRING_CHARS} characters`);
      return (await builtin('pad'))(text, width, char);
    },
    '<s-ns?:s>',
  );
  expression.registerFunction(
    'join',
    async (strings: string[] | string | undefined, separator?: string) => {
      if (Array.isArray(strings)) {
        let length = (separator ?? '').length * Math.max(0, strings.length - 1);
        for (const s of strings) length += typeof s === 'string' ? s.length : 0;
        if (length > MAX_STRING_CHARS) throw new LimitExceeded(`$join would make ${length} characters; the limit is ${MAX_STRING_CHARS}`);
      }
      return (await builtin('join'))(strings, separator);
    },
    '<a<s>s?:s>',
  );
  expression.registerFunction(
    'string',
    async (value: unknown, prettify?: boolean) => {
      if (value !== undefined && jsonLength(value, MAX_STRING_CHARS) > MAX_STRING_CHARS)
        throw new LimitExceeded(`$string would make over ${MAX_STRING_CHARS} characters`);
      return (await builtin('string'))(value, prettify);
    },
    '<x-b?:s>',
  );
}

function checkSize(_node: unknown, _input: unknown, _environment: unknown, result: unknown): void {
  if (typeof result === 'string') {
    if (result.length > MAX_STRING_CHARS)
      throw new LimitExceeded(`A string of ${result.length} characters is over the limit of ${MAX_STRING_CHARS}`);
  } else if (Array.isArray(result) && result.length > MAX_ITEMS) {
    throw new LimitExceeded(`An array of ${result.length} items is over the limit of ${MAX_ITEMS}`);
  }
}

/**
 * An upper bound of the length of `JSON.stringify(value)`, walking no further than `limit`:
 * a value holding one big string many times is small in memory and huge as text.
 */
function jsonLength(value: unknown, limit: number): number {
  let length = 0;
  const stack: unknown[] = [value];
  while (stack.length && length <= limit) {
    const item = stack.pop();
    if (typeof item === 'string') length += item.length * 2 + 2;
    else if (Array.isArray(item)) {
      length += item.length + 2;
      for (const element of item) stack.push(element);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, member] of Object.entries(item)) {
        length += key.length * 2 + 4;
        stack.push(member);
      }
      length += 2;
    } else length += 24;
  }
  return length;
}

function serialize(result: unknown, maxOutputBytes: number): EvaluationAnswer {
  const value = result === undefined ? null : result;
  if (jsonLength(value, maxOutputBytes * 2) > maxOutputBytes * 2)
    return { ok: false, code: 'EXPRESSION_FAILED', message: `The result is over the output limit of ${maxOutputBytes} bytes` };
  let json: string | undefined;
  try {
    json = JSON.stringify(value) as string | undefined;
  } catch {
    json = undefined;
  }
  if (json === undefined) return failed('The expression did not produce JSON (a function?)');
  const bytes = Buffer.byteLength(json);
  if (bytes > maxOutputBytes) return failed(`The result is ${bytes} bytes; the output limit is ${maxOutputBytes}`);
  return { ok: true, json };
}

function failed(message: string): EvaluationAnswer {
  return { ok: false, code: 'EXPRESSION_FAILED', message };
}

/** JSONata throws plain objects: `{ code, position, token, message }`. */
interface JsonataFailure {
  code?: string;
  position?: number;
  message?: string;
  /** Set on D3120/D3121, the errors `$eval` wraps around the inner expression's. */
  error?: unknown;
}

function asFailure(error: unknown): JsonataFailure {
  return typeof error === 'object' && error !== null ? (error as JsonataFailure) : { message: String(error) };
}

function innermost(error: unknown): JsonataFailure {
  let failure = asFailure(error);
  while ((failure.code === 'D3120' || failure.code === 'D3121') && failure.error) failure = asFailure(failure.error);
  return failure;
}

/** A JSONata error as one line: its message, code and position. */
export function describeFailure(error: unknown): string {
  const { code, position, message } = innermost(error);
  if (code === 'LIMIT') return message ?? 'limit exceeded';
  const where = typeof position === 'number' ? ` at position ${position}` : '';
  return code ? `${message ?? 'error'} (JSONata ${code}${where})` : (message ?? 'error');
}

// Linear-time regular expressions.
//
// Regular expressions that tenants write (JSONata regex literals, JSON Schema `pattern` and
// `patternProperties`) run on RE2JS, whose matching time is linear in the input: no pattern
// can backtrack for seconds. RE2 has no backreferences and no lookaround; such a pattern is
// refused when it is saved (`linearRegexProblem`).

/** Longest pattern a tenant may write (characters). */
const MAX_PATTERN_LENGTH = 1000;

/** Compiled patterns by flags and source; compiling costs ~50 µs, matching far less. */
const compiledPatterns = new Map<string, RE2JS>();
const MAX_COMPILED_PATTERNS = 500;

const FLAG_BITS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL };

/** The RE2 form of a pattern; throws when RE2 cannot express it or it is too long. */
function linearPattern(source: string, flags = ''): RE2JS {
  const key = `${flags}/${source}`;
  let pattern = compiledPatterns.get(key);
  if (pattern) return pattern;
  if (source.length > MAX_PATTERN_LENGTH) throw new Error(`the pattern is ${source.length} characters; the limit is ${MAX_PATTERN_LENGTH}`);
  let bits = 0;
  for (const flag of flags) bits |= FLAG_BITS[flag] ?? 0;
  pattern = RE2JS.compile(source, bits);
  if (compiledPatterns.size >= MAX_COMPILED_PATTERNS) compiledPatterns.delete(compiledPatterns.keys().next().value!);
  compiledPatterns.set(key, pattern);
  return pattern;
}

/** Why a tenant's pattern cannot be used (null when it can), for validation before it is stored. */
export function linearRegexProblem(source: string, flags = ''): string | null {
  try {
    linearPattern(source, flags);
    return null;
  } catch (error) {
    const message = (error as Error).message.replace(/^error parsing regexp: /, '');
    return `${message} (patterns run on a linear-time engine: no backreferences or lookaround)`;
  }
}

/**
 * JSONata's `RegexEngine`: JSONata constructs it from the RegExp literal it parsed (always with
 * the `g` flag), sets `lastIndex` and calls `exec`, as it would on a global RegExp; an empty
 * match leaves `lastIndex` where it is, as a RegExp does (JSONata reports D1004 for it).
 */
export class LinearRegExp {
  lastIndex = 0;
  private readonly pattern: RE2JS;

  constructor(regexp: RegExp) {
    this.pattern = linearPattern(regexp.source, regexp.flags.replace(/[gyud]/g, ''));
  }

  exec(text: string): RegExpExecArray | null {
    const matcher = this.pattern.matcher(text);
    if (this.lastIndex > text.length || !matcher.find(this.lastIndex)) {
      this.lastIndex = 0;
      return null;
    }
    const groups: string[] = [];
    for (let i = 0; i <= matcher.groupCount(); i++) groups.push(matcher.group(i) ?? (undefined as unknown as string));
    const match = Object.assign(groups, { index: matcher.start(), input: text, groups: undefined }) as RegExpExecArray;
    this.lastIndex = matcher.end();
    return match;
  }
}

/**
 * Ajv's `code.regExp`: JSON Schema patterns are unanchored searches. Ajv keys compiled patterns
 * by `toString()`, so it must name the pattern (an object's default would make them all one).
 */
export function linearRegExpForAjv(source: string): { test(text: string): boolean; toString(): string } {
  const pattern = linearPattern(source);
  return { test: (text: string) => pattern.matcher(text).find(), toString: () => `/${source}/` };
}
