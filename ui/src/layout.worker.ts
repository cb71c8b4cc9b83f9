// Lays a graph's DAG out with ELK's layered algorithm (elkjs), off the page's thread: 2,000 tasks
// take a few seconds, and the page stays usable meanwhile (its task table is already there).
import ELK, { type ElkExtendedEdge, type ElkNode } from 'elkjs/lib/elk.bundled.js';

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

/** Above this many tasks ELK spends less effort on fewer crossings: a big graph is read by its table and its colours. */
const THOROUGH_UP_TO = 300;

const elk = new ELK();

self.onmessage = async (message: MessageEvent<LayoutRequest>) => {
  const { nodes, nodeWidth, nodeHeight } = message.data;
  const byKey = new Map(nodes.map((n) => [n.id.slice(n.id.indexOf('/') + 1), n.id]));
  const graph: ElkNode & { edges: ElkExtendedEdge[] } = {
    id: 'graph',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'RIGHT',
      'elk.spacing.nodeNode': '12',
      'elk.layered.spacing.nodeNodeBetweenLayers': '48',
      'elk.layered.thoroughness': nodes.length > THOROUGH_UP_TO ? '1' : '7',
      'elk.padding': '[top=16,left=16,bottom=16,right=16]',
    },
    children: nodes.map((n) => ({ id: n.id, width: nodeWidth, height: nodeHeight })),
    edges: nodes.flatMap((n) =>
      n.dependsOn
        .filter((key) => byKey.has(key))
        .map((key) => ({ id: `${byKey.get(key)}>${n.id}`, sources: [byKey.get(key)!], targets: [n.id] })),
    ),
  };
  const laid = (await elk.layout(graph)) as ElkNode & { edges?: ElkExtendedEdge[] };
  const layout: Layout = {
    width: laid.width ?? 0,
    height: laid.height ?? 0,
    nodes: Object.fromEntries((laid.children ?? []).map((n) => [n.id, { x: n.x ?? 0, y: n.y ?? 0 }])),
    edges: (laid.edges ?? []).map((e) => ({
      from: e.sources[0]!,
      to: e.targets[0]!,
      points: (e.sections ?? []).flatMap((s) => [s.startPoint, ...(s.bendPoints ?? []), s.endPoint]),
    })),
  };
  self.postMessage(layout);
};
