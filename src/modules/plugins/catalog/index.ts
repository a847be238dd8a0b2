import { Plugin } from '../domain/plugin';
import { HttpClient } from './http-client';
import { createHttpPlugin } from './http/http.plugin';
import { createLlmPlugin } from './llm/llm.plugin';
import { createMcpPlugin } from './mcp/mcp.plugin';
import { createTransformPlugin, ExpressionEvaluator } from './transform/transform.plugin';

export type { HttpClient } from './http-client';

/** Every plugin this build ships. A new plugin is a folder beside these and one line here. */
export function builtInPlugins(deps: { http: HttpClient; expressions: ExpressionEvaluator }): Plugin[] {
  return [createTransformPlugin(deps.expressions), createHttpPlugin(deps.http), createLlmPlugin(deps.http), createMcpPlugin(deps.http)];
}
