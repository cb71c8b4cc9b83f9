// Lays a graph's DAG out with dagre, off the page's thread: 2,000 tasks take a second or more, and
// the page stays usable meanwhile (its task table is already there).
import dagre from '@dagrejs/dagre';

export interface LayoutRequest {
  nodes: { id: string; dependsOn: string[] }[];
  nodeWidth: number;
  nodeHeight: number;
}

export interface Layout {
  width: number;
  height: number;
  /** Top-left corners, by task id. */
  nodes: Record<string, { x: number; y: number }>;
  /** Each dependency as a polyline from the upstream task to the dependent. */
  edges: { from: string; to: string; points: { x: number; y: number }[] }[];
}

self.onmessage = (message: MessageEvent<LayoutRequest>) => {
  const { nodes, nodeWidth, nodeHeight } = message.data;
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 12, ranksep: 48, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  const byKey = new Map(nodes.map((n) => [n.id.slice(n.id.indexOf('/') + 1), n.id]));
  for (const n of nodes) g.setNode(n.id, { width: nodeWidth, height: nodeHeight });
  for (const n of nodes) for (const key of n.dependsOn) if (byKey.has(key)) g.setEdge(byKey.get(key)!, n.id);
  dagre.layout(g);
  const layout: Layout = {
    width: g.graph().width ?? 0,
    height: g.graph().height ?? 0,
    nodes: Object.fromEntries(
      g.nodes().map((id) => {
        const n = g.node(id);
        return [id, { x: n.x - nodeWidth / 2, y: n.y - nodeHeight / 2 }];
      }),
    ),
    edges: g.edges().map((e) => ({ from: e.v, to: e.w, points: g.edge(e).points ?? [] })),
  };
  self.postMessage(layout);
};
