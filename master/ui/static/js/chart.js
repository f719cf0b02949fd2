// Charts of the master's utilisation samples, drawn by uPlot. Lines differ by dash as well as
// colour, and the latest values are written out under each chart.
import uPlot from "uplot";
import { html, num, useEffect, useMemo, useRef } from "./lib.js";

const LINES = [
  { stroke: "#1f5fa8", dash: [] },
  { stroke: "#a34700", dash: [8, 4] },
  { stroke: "#2a6e2e", dash: [2, 3] },
  { stroke: "#6a1b9a", dash: [10, 3, 2, 3] },
];

function Plot({ title, series, data, yLabel, yRange }) {
  const box = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    const width = Math.max(300, box.current.clientWidth);
    const opts = {
      title,
      width,
      height: 200,
      scales: { x: { time: true }, y: yRange ? { range: yRange } : {} },
      axes: [{}, { label: yLabel, size: 60 }],
      series: [
        { label: "time" },
        ...series.map((label, i) => ({
          label,
          stroke: LINES[i % LINES.length].stroke,
          dash: LINES[i % LINES.length].dash,
          width: 2,
          value: (u, v) => (v === null || v === undefined ? "–" : num(v, 1)),
        })),
      ],
    };
    plot.current = new uPlot(opts, data, box.current);
    const observer = new ResizeObserver(() => {
      if (plot.current && box.current) {
        plot.current.setSize({ width: Math.max(300, box.current.clientWidth), height: 200 });
      }
    });
    observer.observe(box.current);
    return () => {
      observer.disconnect();
      plot.current.destroy();
      plot.current = null;
    };
  }, [series.join("|")]);
  useEffect(() => {
    if (plot.current) plot.current.setData(data);
  }, [data]);
  return html`<div class="chart" ref=${box} role="img" aria-label=${title + " over the last minutes"}></div>`;
}

function series(samples) {
  const resources = ["cpus", "mem", "disk", "gpus"].filter((r) => samples.some((s) => s.total[r] > 0));
  const used = resources.map((r) => samples.map((s) => (s.total[r] > 0 ? (100 * s.used[r]) / s.total[r] : null)));
  const rate = samples.map((s, i) => {
    if (i === 0) return null;
    const dt = s.t - samples[i - 1].t;
    return dt > 0 ? Math.max(0, (s.launched - samples[i - 1].launched) / dt) : null;
  });
  const tasks = [samples.map((s) => s.tasks_active), samples.map((s) => s.pending_tasks), rate];
  const last = samples[samples.length - 1];
  const summary = last
    ? resources.map((r) => `${r} ${((100 * last.used[r]) / last.total[r]).toFixed(0)}%`).join(" · ")
    : "no sample yet";
  return { resources, used, tasks, summary, last };
}

// Allocated % of the usable cluster per resource, and tasks with launches/s, over the kept
// samples (the master takes one every few seconds: GET /api/v1/cluster/samples).
export function UtilisationCharts({ samples }) {
  // Recomputed (and redrawn) only when a sample arrives, not on every render of the page.
  const { resources, used, tasks, summary, last } = useMemo(() => series(samples), [samples]);
  const t = useMemo(() => samples.map((s) => s.t), [samples]);
  const usedData = useMemo(() => [t, ...used], [t, used]);
  const tasksData = useMemo(() => [t, ...tasks], [t, tasks]);
  return html`
    <div class="charts">
      <figure>
        <${Plot} title="Allocated, % of usable" series=${resources} data=${usedData} yLabel="%" yRange=${[0, 100]} />
        <figcaption>Now: ${summary}</figcaption>
      </figure>
      <figure>
        <${Plot} title="Tasks" series=${["running", "pending (unmet demand)", "launches/s"]} data=${tasksData} yLabel="tasks" />
        <figcaption>
          Now: ${last ? `${num(last.tasks_active, 0)} tasks, ${num(last.pending_tasks, 0)} pending` : "no sample yet"}
          ${` · ${samples.length} samples, one every few seconds`}
        </figcaption>
      </figure>
    </div>`;
}
