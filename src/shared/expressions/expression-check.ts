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
