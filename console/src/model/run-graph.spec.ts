import { NODE_HEIGHT, runGraph } from './run-graph';

describe('runGraph', () => {
  const definition = [
    { id: 'fetch' },
    { id: 'left', needs: ['fetch'] },
    { id: 'right', needs: ['fetch'] },
    { id: 'join', needs: ['left', 'right'] },
  ];

  it('lays the steps out from their needs: each step below what it needs, an edge from each need', () => {
    const graph = runGraph(definition, []);
    const y = Object.fromEntries(graph.nodes.map((node) => [node.id, node.y]));
    expect(y.left).toBeGreaterThan(y.fetch);
    expect(y.right).toBe(y.left);
    expect(y.join).toBeGreaterThan(y.left);
    expect(graph.edges.map((edge) => `${edge.from}->${edge.to}`).sort()).toEqual([
      'fetch->left',
      'fetch->right',
      'left->join',
      'right->join',
    ]);
    for (const edge of graph.edges) expect(edge.points.length).toBeGreaterThanOrEqual(2);
    // Every node inside the drawing.
    for (const node of graph.nodes) {
      expect(node.x - node.width / 2).toBeGreaterThanOrEqual(0);
      expect(node.y + NODE_HEIGHT / 2).toBeLessThanOrEqual(graph.height);
    }
  });

  it("shows each step's status from the run, pending where the run has not reached it, and its child run", () => {
    const graph = runGraph(definition, [
      { id: 'fetch', status: 'succeeded', attempts: 1 },
      { id: 'left', status: 'failed', attempts: 3 },
      { id: 'right', status: 'succeeded', attempts: 1, childRunId: 'child-1' },
    ]);
    const byId = Object.fromEntries(graph.nodes.map((node) => [node.id, node]));
    expect(byId.left).toMatchObject({ status: 'failed', attempts: 3 });
    expect(byId.right.childRunId).toBe('child-1');
    expect(byId.join).toMatchObject({ status: 'pending', attempts: 0, childRunId: null });
  });

  it('draws no edge for a need that names no step, and keeps steps only the run knows', () => {
    const graph = runGraph([{ id: 'a', needs: ['missing', 'a'] }], [{ id: 'old', status: 'succeeded' }]);
    expect(graph.nodes.map((node) => node.id)).toEqual(['a', 'old']);
    expect(graph.edges).toEqual([]);
  });
});
