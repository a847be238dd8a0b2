import { DomainError } from '../../../shared/errors/domain-error';
import { Agent, JsonObject } from '../../agents/domain/agent';
import { StepDefinition, WorkflowDefinition } from '../domain/definition';

/** A workflow or an agent, as what starts what sees them. */
export type Starter = { kind: 'workflow'; id: string } | { kind: 'agent'; id: string };

/** What a starter starts, and its name for the path of a cycle. */
interface Node {
  name: string;
  starts: Starter[];
}

/** The saved workflows and agents of an organization, as the check reads them; null: gone. */
export interface StartGraph {
  workflow(id: string): Promise<WorkflowDefinition | null>;
  agent(id: string): Promise<Agent | null>;
}

/** Workflows and agents a cycle check follows at most. */
const MAX_FOLLOWED = 200;

/**
 * WORKFLOW_CYCLE when what `start` would start, through the saved workflows and agents, starts
 * it again: a workflow's workflow and agent steps (a map's inner step and `onFailure` too), an
 * agent's workflow and agent tools. Such a loop would only end at the depth limit, having filled
 * the organization's slots on the way.
 */
export async function refuseStartCycle(graph: StartGraph, start: Starter, node: Node): Promise<void> {
  const key = (s: Starter) => `${s.kind}:${s.id}`;
  const seen = new Set([key(start)]);
  const queue: Array<{ node: Node; path: string[] }> = [{ node, path: [node.name] }];
  for (let next = queue.shift(); next && seen.size <= MAX_FOLLOWED; next = queue.shift()) {
    for (const started of next.node.starts) {
      if (key(started) === key(start)) {
        const what = start.kind === 'workflow' ? 'The workflow' : 'The agent';
        throw new DomainError('WORKFLOW_CYCLE', `${what} would start itself: ${[...next.path, node.name].join(' -> ')}`);
      }
      if (seen.has(key(started))) continue;
      seen.add(key(started));
      const found = await nodeOf(graph, started);
      if (found) queue.push({ node: found, path: [...next.path, found.name] });
    }
  }
}

async function nodeOf(graph: StartGraph, starter: Starter): Promise<Node | null> {
  if (starter.kind === 'workflow') {
    const definition = await graph.workflow(starter.id);
    return definition && workflowNode(definition);
  }
  const agent = await graph.agent(starter.id);
  return agent && agentNode(agent.name, agent.config);
}

export function workflowNode(definition: WorkflowDefinition): Node {
  const steps = [...definition.steps, ...(definition.onFailure ? [definition.onFailure] : [])].flatMap(
    (s): Array<Pick<StepDefinition, 'workflow' | 'agent'>> => (s.map?.step ? [s, s.map.step] : [s]),
  );
  return {
    name: definition.name,
    starts: steps.flatMap((s): Starter[] => [
      ...(s.workflow ? [{ kind: 'workflow' as const, id: s.workflow }] : []),
      ...(s.agent ? [{ kind: 'agent' as const, id: s.agent }] : []),
    ]),
  };
}

export function agentNode(name: string, config: JsonObject): Node {
  const tools = Array.isArray(config.tools) ? (config.tools as JsonObject[]) : [];
  return {
    name,
    starts: tools.flatMap((tool): Starter[] => [
      ...(typeof tool?.workflow === 'string' ? [{ kind: 'workflow' as const, id: tool.workflow }] : []),
      ...(typeof tool?.agent === 'string' ? [{ kind: 'agent' as const, id: tool.agent }] : []),
    ]),
  };
}
