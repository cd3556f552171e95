// chart.js - a plain SVG line chart (no library): one polyline, min/max
// labels on both axes.
import { svg, h } from './dom.js';

function fmt(v) {
  if (!isFinite(v)) return '';
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

// points: [[x, y], ...] sorted by x. Returns an <svg> element.
export function lineChart(points, { xLabel = 'step', yLabel = 'loss', width = 640, height = 260 } = {}) {
  const pad = { l: 64, r: 16, t: 16, b: 40 };
  const w = width - pad.l - pad.r, hgt = height - pad.t - pad.b;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img', 'aria-label': yLabel });
  if (!points.length) return root;
  let x0 = points[0][0], x1 = points[points.length - 1][0];
  let y0 = Infinity, y1 = -Infinity;
  for (const [, y] of points) { if (y < y0) y0 = y; if (y > y1) y1 = y; }
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  if (y1 === y0) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; }
  const sx = (x) => pad.l + ((x - x0) / (x1 - x0)) * w;
  const sy = (y) => pad.t + (1 - (y - y0) / (y1 - y0)) * hgt;
  const pts = points.map(([x, y]) => sx(x).toFixed(1) + ',' + sy(y).toFixed(1)).join(' ');
  root.append(
    svg('rect', { x: pad.l, y: pad.t, width: w, height: hgt, class: 'chart-bg' }),
    svg('line', { x1: pad.l, y1: pad.t + hgt / 2, x2: pad.l + w, y2: pad.t + hgt / 2, class: 'chart-grid' }),
    svg('line', { x1: pad.l, y1: pad.t, x2: pad.l, y2: pad.t + hgt, class: 'chart-axis' }),
    svg('line', { x1: pad.l, y1: pad.t + hgt, x2: pad.l + w, y2: pad.t + hgt, class: 'chart-axis' }),
    svg('polyline', { points: pts, class: 'chart-line' }),
    svg('text', { x: pad.l - 6, y: pad.t + 4, 'text-anchor': 'end', class: 'chart-label' }, fmt(y1)),
    svg('text', { x: pad.l - 6, y: pad.t + hgt, 'text-anchor': 'end', class: 'chart-label' }, fmt(y0)),
    svg('text', { x: pad.l, y: pad.t + hgt + 16, 'text-anchor': 'start', class: 'chart-label' }, fmt(x0)),
    svg('text', { x: pad.l + w, y: pad.t + hgt + 16, 'text-anchor': 'end', class: 'chart-label' }, fmt(x1)),
    svg('text', { x: pad.l + w / 2, y: height - 6, 'text-anchor': 'middle', class: 'chart-title' }, xLabel),
    svg('text', { x: 14, y: pad.t + hgt / 2, 'text-anchor': 'middle', class: 'chart-title',
      transform: `rotate(-90 14 ${pad.t + hgt / 2})` }, yLabel));
  if (points.length === 1) {
    const [x, y] = points[0];
    root.append(svg('circle', { cx: sx(x), cy: sy(y), r: 3, class: 'chart-dot' }));
  }
  return root;
}

export function chartBox(el) { return h('div', { class: 'chart-box' }, el); }
