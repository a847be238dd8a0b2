/**
 * dependency-cruiser finds cycles between files; this finds them between the parts of src/
 * (each module, database/, queue/, shared/, config/): the file graph collapsed to those parts,
 * then any strongly connected component of more than one part is a cycle. Exits 1 on one.
 */
import { cruise } from 'dependency-cruiser';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

const PART = /^src\/(modules\/[^/]+|[^/]+\/)/;

function partOf(path) {
  const match = PART.exec(path);
  return match ? match[1].replace(/\/$/, '') : null;
}

/** Tarjan's algorithm: the strongly connected components of `graph`. */
function components(graph) {
  let index = 0;
  const indices = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (node) => {
    indices.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node), indices.get(next)));
      }
    }
    if (low.get(node) === indices.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      found.push(component);
    }
  };
  for (const node of graph.keys()) if (!indices.has(node)) visit(node);
  return found;
}

async function main() {
  const result = await cruise(
    ['src'],
    {
      tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
      exclude: { path: '(\\.(spec|fake)\\.ts$|src/database/migrations/)' },
    },
    undefined,
    { tsConfig: extractTSConfig('tsconfig.json') },
  );
  const graph = new Map();
  const why = new Map();
  for (const module of result.output.modules) {
    const from = partOf(module.source);
    if (!from) continue;
    if (!graph.has(from)) graph.set(from, new Set());
    for (const dependency of module.dependencies) {
      const to = partOf(dependency.resolved);
      if (!to || to === from) continue;
      graph.get(from).add(to);
      if (!why.has(`${from}>${to}`)) why.set(`${from}>${to}`, `${module.source} → ${dependency.resolved}`);
    }
  }
  const cycles = components(graph).filter((c) => c.length > 1);
  for (const cycle of cycles) {
    console.error(`  error module-cycle: ${cycle.sort().join(' ↔ ')}`);
    for (const from of cycle)
      for (const to of cycle) if (why.has(`${from}>${to}`)) console.error(`    ${why.get(`${from}>${to}`)}`);
  }
  if (cycles.length) {
    console.error(`x ${cycles.length} cycle(s) between parts of src/`);
    process.exit(1);
  }
  console.log(`✔ no cycles between the ${graph.size} parts of src/`);
}

main().catch((error) => {
  console.error(error);
  process.exit(2);
});
