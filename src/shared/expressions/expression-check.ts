import jsonata from 'jsonata';
import { linearRegexProblem } from './linear-regex';
import { describeFailure } from './sandbox-worker';

/**
 * Why an expression cannot be stored (null when it can): it must compile, and every regular
 * expression in it must be one the linear-time engine runs. Parsing is linear in the text and
 * evaluates nothing, so it runs on the request's own thread.
 */
export function expressionProblem(text: string): string | null {
  let ast: unknown;
  try {
    ast = (jsonata(text) as unknown as { ast(): unknown }).ast();
  } catch (error) {
    return describeFailure(error);
  }
  for (const regex of regexLiterals(ast)) {
    const problem = linearRegexProblem(regex.source, regex.flags.replace('g', ''));
    if (problem) return `regular expression /${regex.source}/ cannot be used: ${problem}`;
  }
  return null;
}

/**
 * The names an expression reads under `name` at its root (`steps.upper.output` and
 * `$.steps.upper` read `upper` under `steps`), from its parse tree; none when it does not parse.
 */
export function rootFieldsUnder(text: string, name: string): string[] {
  let ast: unknown;
  try {
    ast = (jsonata(text) as unknown as { ast(): unknown }).ast();
  } catch {
    return [];
  }
  const found = new Set<string>();
  const seen = new Set<object>();
  const stack: unknown[] = [ast];
  while (stack.length) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object' || seen.has(node)) continue;
    seen.add(node);
    const { type, steps } = node as { type?: string; steps?: Array<{ type?: string; value?: unknown }> };
    if (type === 'path' && Array.isArray(steps)) {
      const at = steps[0]?.type === 'variable' && steps[0].value === '' ? 1 : 0;
      const [root, field] = [steps[at], steps[at + 1]];
      if (root?.type === 'name' && root.value === name && field?.type === 'name' && typeof field.value === 'string') found.add(field.value);
    }
    stack.push(...Object.values(node));
  }
  return [...found];
}

/** Every regex literal of a parsed expression (JSONata keeps them as RegExp values of `regex` nodes). */
function regexLiterals(ast: unknown): RegExp[] {
  const found: RegExp[] = [];
  const seen = new Set<object>();
  const stack: unknown[] = [ast];
  while (stack.length) {
    const node = stack.pop();
    if (node instanceof RegExp) found.push(node);
    else if (node !== null && typeof node === 'object' && !seen.has(node)) {
      seen.add(node);
      stack.push(...Object.values(node));
    }
  }
  return found;
}
