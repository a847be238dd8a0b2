import { Capability, CapabilityManifest, Plugin } from '../../domain/plugin';
import { compileJsonata, evaluateJsonata } from './jsonata-expression';
import { toJsonOutput } from './json-output';

export { compileJsonata } from './jsonata-expression';

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

const jsonata: Capability = {
  async execute({ config, input, signal, timeoutMs }) {
    const { expression } = config as unknown as JsonataConfig;
    return toJsonOutput(await evaluateJsonata(expression, input, { signal, timeoutMs }));
  },
  checkConfig(config) {
    const compiled = compileJsonata((config as unknown as JsonataConfig).expression);
    return compiled.ok ? [] : [{ path: 'expression', message: `expression does not compile: ${compiled.message}` }];
  },
};

/** `transform.jsonata`, as an agent kind and as a workflow action. */
export const transformPlugin: Plugin = {
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
