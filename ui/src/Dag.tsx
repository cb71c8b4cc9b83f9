// A graph's tasks as a DAG, laid out once per graph by ELK (layout.worker.ts) and coloured by status as
// it changes. Drag to pan, wheel or the buttons to zoom; every task is a link, reached by Tab too.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { AgentApiResult } from '../../src/api/operationResults.js';
import { taskHref } from './common.js';
import type { Layout, LayoutRequest } from './layout.worker.js';

type Task = AgentApiResult<'graph.show'>['tasks'][number];

const NODE_WIDTH = 196;
const NODE_HEIGHT = 46;
const DAG_HEIGHT_MIN = 160;
const DAG_HEIGHT_MAX = 560;

export function Dag({ graphId, tasks }: { graphId: string; tasks: Task[] }) {
  const [layout, setLayout] = useState<Layout | undefined>();
  const [error, setError] = useState<string | undefined>();
  // The shape only: statuses change, the layout does not.
  const shape = useMemo(() => tasks.map((t) => `${t.id}<${t.dependsOn.join(',')}`).join(';'), [tasks]);
  useEffect(() => {
    setLayout(undefined);
    const worker = new Worker(new URL('./layout.worker.ts', import.meta.url), { type: 'module' });
    worker.onmessage = (m: MessageEvent<Layout>) => {
      setLayout(m.data);
      // Its memory (the layout library's) is given back at once.
      worker.terminate();
    };
    worker.onerror = (e) => setError(e.message || 'the layout failed');
    worker.postMessage({
      nodes: tasks.map((t) => ({ id: t.id, dependsOn: t.dependsOn })),
      nodeWidth: NODE_WIDTH,
      nodeHeight: NODE_HEIGHT,
    } satisfies LayoutRequest);
    return () => worker.terminate();
  }, [graphId, shape]);

  const [view, setView] = useState({ x: 0, y: 0, scale: 1 });
  const svg = useRef<SVGSVGElement>(null);
  const drag = useRef<{ x: number; y: number; vx: number; vy: number } | undefined>(undefined);
  const fit = () => {
    if (!layout || !svg.current) return;
    const box = svg.current.getBoundingClientRect();
    const scale = Math.max(0.05, Math.min(1, box.width / Math.max(1, layout.width), box.height / Math.max(1, layout.height)));
    // Centred in the box: a small graph does not sit in a corner of an empty canvas.
    setView({ x: Math.max(0, (box.width - layout.width * scale) / 2), y: Math.max(0, (box.height - layout.height * scale) / 2), scale });
  };
  useEffect(fit, [layout]);

  if (error) return <div class="error">The graph could not be laid out: {error}. The table below lists every task.</div>;
  if (!layout)
    return (
      <div class="dag-placeholder" aria-busy="true">
        Laying out {tasks.length === 1 ? 'the task' : `${tasks.length.toLocaleString()} tasks`}…
      </div>
    );
  const zoom = (factor: number) => setView((v) => ({ ...v, scale: Math.min(4, Math.max(0.05, v.scale * factor)) }));
  return (
    <div class="dag">
      <div class="dag-tools" role="toolbar" aria-label="Zoom">
        <button type="button" onClick={() => zoom(1.25)} aria-label="Zoom in">
          +
        </button>
        <button type="button" onClick={() => zoom(0.8)} aria-label="Zoom out">
          −
        </button>
        <button type="button" onClick={fit}>
          Fit
        </button>
      </div>
      <svg
        ref={svg}
        class="dag-canvas"
        // As tall as the graph needs, up to a limit (and the stylesheet's share of the window).
        style={{ height: `${Math.min(DAG_HEIGHT_MAX, Math.max(DAG_HEIGHT_MIN, layout.height + 32))}px` }}
        role="img"
        aria-label={`Graph ${graphId}: ${tasks.length} tasks`}
        onWheel={(e) => {
          e.preventDefault();
          zoom(e.deltaY < 0 ? 1.1 : 0.9);
        }}
        onPointerDown={(e) => {
          if ((e.target as Element).closest('a')) return;
          drag.current = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y };
          (e.currentTarget as Element).setPointerCapture(e.pointerId);
        }}
        onPointerMove={(e) => {
          const d = drag.current;
          if (d) setView((v) => ({ ...v, x: d.vx + (e.clientX - d.x), y: d.vy + (e.clientY - d.y) }));
        }}
        onPointerUp={() => (drag.current = undefined)}
      >
        <g transform={`translate(${view.x} ${view.y}) scale(${view.scale})`}>
          {layout.edges.map((e) => (
            <polyline key={`${e.from}>${e.to}`} class="dag-edge" points={e.points.map((p) => `${p.x},${p.y}`).join(' ')} />
          ))}
          {tasks.map((t) => {
            const at = layout.nodes[t.id];
            if (!at) return null;
            return (
              // Out of the Tab order: the table below lists every task, and 2,000 stops here would bury it.
              <a
                key={t.id}
                href={taskHref(t.id)}
                tabIndex={-1}
                class={`dag-node status-${t.status}`}
                data-task={t.key}
                data-status={t.status}
              >
                <title>{`${t.key}: ${t.status}${t.owner ? `, owner ${t.owner}` : ''}, claim version ${t.claimVersion}, ${t.attempts} attempts`}</title>
                <rect x={at.x} y={at.y} width={NODE_WIDTH} height={NODE_HEIGHT} rx={6} />
                <text x={at.x + 8} y={at.y + 18} class="dag-key">
                  {t.key.length > 22 ? `${t.key.slice(0, 21)}…` : t.key}
                </text>
                <text x={at.x + 8} y={at.y + 36} class="dag-meta">
                  {`${t.status} · v${t.claimVersion} · ${t.attempts}×${t.owner ? ` · ${t.owner.slice(0, 14)}` : ''}`}
                </text>
              </a>
            );
          })}
        </g>
      </svg>
    </div>
  );
}
