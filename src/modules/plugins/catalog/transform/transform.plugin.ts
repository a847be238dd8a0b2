import { INPUT_BODY_LIMIT_BYTES } from '../../../../config/app-config';
import type { ExpressionSandbox } from '../../../../shared/expressions/expression-sandbox';
import { ExpressionFailure } from '../../../../shared/expressions/expression-sandbox';
import { expressionProblem } from '../../../../shared/expressions/expression-check';
import { Capability, CapabilityManifest, ExecutionError, Plugin } from '../../domain/plugin';

/** What the transform plugin needs of the sandbox; `ExpressionSandbox` satisfies it. */
export type ExpressionEvaluator = Pick<ExpressionSandbox, 'evaluate'>;

/** Largest output a transform may produce, serialized: the limit of an execute's body (2 MiB), so an input passes whole. */
export const MAX_OUTPUT_BYTES = INPUT_BODY_LIMIT_BYTES;

interface JsonataConfig {
  expression: string;
}

const jsonataManifest: CapabilityManifest = {
  name: 'jsonata',
  description: 'Evaluates a JSONata expression over the input; the result is the output.',
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['expression'],
    properties: {
      expression: { type: 'string', minLength: 1, maxLength: 10000, description: 'JSONata expression; `$` is the input.' },
    },
  },
};

function jsonataCapability(expressions: ExpressionEvaluator): Capability {
  return {
    async execute({ organizationId, config, input, signal, timeoutMs }) {
      const { expression } = config as unknown as JsonataConfig;
      try {
        return await expressions.evaluate(expression, input, { organizationId, signal, timeoutMs, maxOutputBytes: MAX_OUTPUT_BYTES });
      } catch (error) {
        if (error instanceof ExpressionFailure) throw new ExecutionError(error.code, error.message);
        throw error;
      }
    },
    checkConfig(config) {
      const problem = expressionProblem((config as unknown as JsonataConfig).expression);
      return problem ? [{ path: 'expression', message: `expression cannot be used: ${problem}` }] : [];
    },
  };
}

/** `transform.jsonata`, as an agent kind and as an action; expressions run in the sandbox. */
export function createTransformPlugin(expressions: ExpressionEvaluator): Plugin {
  const jsonata = jsonataCapability(expressions);
  return {
    manifest: {
      slug: 'transform',
      name: 'Transform',
      version: '1.0.0',
      description: 'Reshapes JSON with JSONata expressions, bounded in time, depth and output size.',
      configSchema: { type: 'object', additionalProperties: false, properties: {} },
      secretFields: [],
      agentKinds: [jsonataManifest],
      actions: [jsonataManifest],
    },
    agentKinds: { jsonata },
    actions: { jsonata },
  };
}
