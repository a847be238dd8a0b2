import { useMemo } from 'react';
import { runGraph, type DefinedStep, type StepState } from '../model/run-graph';

/** The run's steps as an SVG graph; a step is a button that selects it. */
export function RunGraphView({
  definition,
  steps,
  selected,
  onSelect,
}: {
  definition: DefinedStep[];
  steps: StepState[];
  selected: string | null;
  onSelect: (id: string) => void;
}) {
  const graph = useMemo(() => runGraph(definition, steps), [definition, steps]);
  return (
    <svg
      className="graph"
      role="group"
      aria-label="Steps of the run"
      width={graph.width}
      height={graph.height}
      viewBox={`0 0 ${graph.width} ${graph.height}`}
    >
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" className="arrow" />
        </marker>
      </defs>
      {graph.edges.map((edge) => (
        <polyline
          key={`${edge.from}->${edge.to}`}
          className="edge"
          points={edge.points.map((p) => `${p.x},${p.y}`).join(' ')}
          markerEnd="url(#arrow)"
        />
      ))}
      {graph.nodes.map((node) => (
        <g
          key={node.id}
          role="button"
          tabIndex={0}
          aria-label={`Step ${node.id}: ${node.status}`}
          aria-pressed={selected === node.id}
          className={`node status-${node.status}${selected === node.id ? ' selected' : ''}`}
          transform={`translate(${node.x - node.width / 2},${node.y - node.height / 2})`}
          onClick={() => onSelect(node.id)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' || event.key === ' ') {
              event.preventDefault();
              onSelect(node.id);
            }
          }}
        >
          <rect width={node.width} height={node.height} rx={6} />
          <text x={10} y={21} className="node-id">
            {node.id}
          </text>
          <text x={10} y={40} className="node-status">
            {node.status}
            {node.attempts > 1 ? ` · ${node.attempts} attempts` : ''}
            {node.childRunId ? ' · child run' : ''}
          </text>
        </g>
      ))}
    </svg>
  );
}
