import dagre from '@dagrejs/dagre';

/** A step of a workflow's definition, as far as the graph needs it. */
export interface DefinedStep {
  id: string;
  needs?: string[];
}

/** A step of a run, as far as the graph needs it. */
export interface StepState {
  id: string;
  status: string;
  attempts?: number;
  childRunId?: string | null;
}

export interface GraphNode {
  id: string;
  status: string;
  attempts: number;
  childRunId: string | null;
  /** The node's centre, and its size. */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface GraphEdge {
  from: string;
  to: string;
  /** Where the edge is drawn through, from `from` to `to`. */
  points: Array<{ x: number; y: number }>;
}

export interface RunGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  width: number;
  height: number;
}

export const NODE_WIDTH = 180;
export const NODE_HEIGHT = 52;

/**
 * The run's steps as a graph laid out from their `needs` (top to bottom, by dagre): one node per
 * step of the definition, with the run's status of it (`pending` for a step the run has not
 * reached), and an edge from each step to every step that needs it. A `needs` naming no step of
 * the definition draws no edge; steps the run has that the definition does not (an older
 * version's) are added unconnected, so nothing the run did is hidden.
 */
export function runGraph(definition: DefinedStep[], steps: StepState[]): RunGraph {
  const states = new Map(steps.map((step) => [step.id, step]));
  const ids = [...definition.map((step) => step.id), ...steps.map((step) => step.id).filter((id) => !definition.some((d) => d.id === id))];
  const known = new Set(ids);
  const layout = new dagre.graphlib.Graph();
  layout.setGraph({ rankdir: 'TB', nodesep: 32, ranksep: 48, marginx: 8, marginy: 8 });
  layout.setDefaultEdgeLabel(() => ({}));
  for (const id of ids) layout.setNode(id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  const edges: Array<{ from: string; to: string }> = [];
  for (const step of definition) {
    for (const need of new Set(step.needs ?? [])) {
      if (!known.has(need) || need === step.id) continue;
      layout.setEdge(need, step.id);
      edges.push({ from: need, to: step.id });
    }
  }
  dagre.layout(layout);
  const nodes = ids.map((id): GraphNode => {
    const placed = layout.node(id);
    const state = states.get(id);
    return {
      id,
      status: state?.status ?? 'pending',
      attempts: state?.attempts ?? 0,
      childRunId: state?.childRunId ?? null,
      x: placed.x,
      y: placed.y,
      width: placed.width,
      height: placed.height,
    };
  });
  const graph = layout.graph();
  return {
    nodes,
    edges: edges.map(({ from, to }) => ({ from, to, points: layout.edge(from, to).points ?? [] })),
    width: graph.width ?? 0,
    height: graph.height ?? 0,
  };
}
