// chart.js - live line charts for metric series (loss, throughput).
//
//   const c = liveChart(el, { name: 'loss', xLabel, yLabel });
//   c.push([[step, value], ...]);   // appends (x ascending; an x already
//                                   // present is overwritten)
//   c.dispose();
//
// Points are kept in two typed arrays that grow by doubling, so 100,000
// points cost 1.6 MB and an append is O(1). Drawing is coalesced into one
// requestAnimationFrame and down-sampled with LTTB (largest triangle three
// buckets) to one point per horizontal pixel, so a frame costs the
// same at 1,000 and at 100,000 points. Drawn with Apache ECharts when it is
// served (/vendor/echarts/, see loadECharts), else as an SVG polyline.
//
// window.__ty.charts[name] = {points, drawn, frameMs, frames, renderer} is kept for the tests
// and bench/web.
import { svg, h, replace } from './dom.js';

const live = (window.__ty = window.__ty || {});
live.charts = live.charts || {};

// LTTB over xs/ys[0..n): indices of at most `threshold` points, first and
// last kept. Sveinn Steinarsson, "Downsampling Time Series for Visual
// Representation" (2013), algorithm 4.
export function lttb(xs, ys, n, threshold) {
  if (threshold >= n || threshold < 3) return Array.from({ length: n }, (_, i) => i);
  const out = new Array(threshold);
  const every = (n - 2) / (threshold - 2);
  let a = 0;
  out[0] = 0;
  for (let i = 0; i < threshold - 2; i++) {
    let avgX = 0, avgY = 0;
    let s = Math.floor((i + 1) * every) + 1, e = Math.min(Math.floor((i + 2) * every) + 1, n);
    const len = e - s;
    for (; s < e; s++) { avgX += xs[s]; avgY += ys[s]; }
    avgX /= len; avgY /= len;
    const rs = Math.floor(i * every) + 1, re = Math.floor((i + 1) * every) + 1;
    const ax = xs[a], ay = ys[a];
    let max = -1, pick = rs;
    for (let j = rs; j < re; j++) {
      const area = Math.abs((ax - avgX) * (ys[j] - ay) - (ax - xs[j]) * (avgY - ay));
      if (area > max) { max = area; pick = j; }
    }
    out[i + 1] = pick;
    a = pick;
  }
  out[threshold - 1] = n - 1;
  return out;
}

function fmt(v) {
  if (!isFinite(v)) return '';
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

// The ECharts module (web/README.md, "Third-party code") with its zh-CN
// locale registered, or null when <html data-echarts> names none or it does
// not load (the SVG fallback then draws).
let echartsP = null;
export function loadECharts() {
  if (!echartsP) {
    const url = document.documentElement.dataset.echarts;
    const zh = document.documentElement.dataset.echartsZh;
    echartsP = !url ? Promise.resolve(null) : import(url).then(async (echarts) => {
      if (zh) { try { echarts.registerLocale('ZH', (await import(zh)).default); } catch (_) { /* English labels */ } }
      return echarts;
    }).catch(() => null);
  }
  return echartsP;
}

export function liveChart(el, opts = {}) {
  const name = opts.name || 'chart';
  let cap = 1024, n = 0;
  let xs = new Float64Array(cap), ys = new Float64Array(cap);
  let raf = 0, disposed = false, ec = null, ecTried = false;
  const stat = (live.charts[name] = { points: 0, drawn: 0, frameMs: 0, frames: 0, renderer: 'svg' });
  const box = h('div', { class: 'chart-area', role: 'img', 'aria-label': opts.label || name });
  const note = h('p', { class: 'muted small chart-empty' }, opts.empty || '');
  el.append(box, note);

  function grow() {
    cap *= 2;
    const nx = new Float64Array(cap), ny = new Float64Array(cap);
    nx.set(xs.subarray(0, n)); ny.set(ys.subarray(0, n));
    xs = nx; ys = ny;
  }

  function push(points) {
    for (const [x, y] of points) {
      if (typeof x !== 'number' || typeof y !== 'number' || !isFinite(y)) continue;
      if (n && x <= xs[n - 1]) {
        // A step seen again (a restart from a checkpoint): overwrite it and
        // drop what came after it.
        let i = n - 1;
        while (i > 0 && xs[i - 1] >= x) i--;
        n = i;
      }
      if (n === cap) grow();
      xs[n] = x; ys[n] = y; n++;
    }
    stat.points = n;
    schedule();
  }

  function schedule() {
    if (!raf && !disposed) raf = requestAnimationFrame(draw);
  }

  function draw() {
    raf = 0;
    if (disposed) return;
    const t0 = performance.now();
    note.hidden = n > 0;
    const width = Math.max(200, box.clientWidth || 640);
    const idx = lttb(xs, ys, n, Math.max(3, Math.floor(width)));
    stat.drawn = idx.length;
    if (!ecTried) {
      ecTried = true;
      loadECharts().then((echarts) => {
        if (!echarts || disposed) return;
        replace(box);
        ec = echarts.init(box, null, { renderer: 'canvas', locale: document.documentElement.lang === 'zh-CN' ? 'ZH' : 'EN' });
        ec.setOption({
          animation: false, grid: { left: 56, right: 16, top: 16, bottom: 40 },
          tooltip: { trigger: 'axis' },
          xAxis: { type: 'value', name: opts.xLabel || '', nameLocation: 'middle', nameGap: 26, scale: true },
          yAxis: { type: 'value', name: opts.yLabel || '', scale: true },
          // Already LTTB-sampled here to one point per pixel.
          series: [{ type: 'line', showSymbol: false, data: [] }],
        });
        stat.renderer = 'echarts';
        schedule();
      });
    }
    if (ec) {
      const data = new Array(idx.length);
      for (let i = 0; i < idx.length; i++) data[i] = [xs[idx[i]], ys[idx[i]]];
      ec.setOption({ series: [{ data }] });
    } else drawSvg(idx, width);
    stat.frameMs = performance.now() - t0;
    if (n && !stat.firstPointMs) stat.firstPointMs = performance.now();
    stat.frames++;
  }

  function drawSvg(idx, width) {
    const height = 240, pad = { l: 64, r: 16, t: 12, b: 40 };
    const w = width - pad.l - pad.r, hg = height - pad.t - pad.b;
    const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', 'aria-hidden': 'true' });
    if (!idx.length) { replace(box, root); return; }
    let x0 = xs[0], x1 = xs[n - 1], y0 = Infinity, y1 = -Infinity;
    for (let i = 0; i < n; i++) { if (ys[i] < y0) y0 = ys[i]; if (ys[i] > y1) y1 = ys[i]; }
    if (x1 === x0) { x0 -= 1; x1 += 1; }
    if (y1 === y0) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; }
    const sx = (x) => pad.l + ((x - x0) / (x1 - x0)) * w;
    const sy = (y) => pad.t + (1 - (y - y0) / (y1 - y0)) * hg;
    let pts = '';
    for (const i of idx) pts += sx(xs[i]).toFixed(1) + ',' + sy(ys[i]).toFixed(1) + ' ';
    root.append(
      svg('rect', { x: pad.l, y: pad.t, width: w, height: hg, class: 'chart-bg' }),
      svg('line', { x1: pad.l, y1: pad.t + hg / 2, x2: pad.l + w, y2: pad.t + hg / 2, class: 'chart-grid' }),
      svg('line', { x1: pad.l, y1: pad.t, x2: pad.l, y2: pad.t + hg, class: 'chart-axis' }),
      svg('line', { x1: pad.l, y1: pad.t + hg, x2: pad.l + w, y2: pad.t + hg, class: 'chart-axis' }),
      svg('polyline', { points: pts.trim(), class: 'chart-line' }),
      svg('text', { x: pad.l - 6, y: pad.t + 4, 'text-anchor': 'end', class: 'chart-label' }, fmt(y1)),
      svg('text', { x: pad.l - 6, y: pad.t + hg, 'text-anchor': 'end', class: 'chart-label' }, fmt(y0)),
      svg('text', { x: pad.l, y: pad.t + hg + 16, 'text-anchor': 'start', class: 'chart-label' }, fmt(x0)),
      svg('text', { x: pad.l + w, y: pad.t + hg + 16, 'text-anchor': 'end', class: 'chart-label' }, fmt(x1)),
      svg('text', { x: pad.l + w / 2, y: height - 6, 'text-anchor': 'middle', class: 'chart-title' }, opts.xLabel || ''),
      svg('text', { x: 14, y: pad.t + hg / 2, 'text-anchor': 'middle', class: 'chart-title', transform: `rotate(-90 14 ${pad.t + hg / 2})` }, opts.yLabel || ''));
    if (idx.length === 1) root.append(svg('circle', { cx: sx(xs[0]), cy: sy(ys[0]), r: 3, class: 'chart-dot' }));
    replace(box, root);
  }

  // A resize that changes the box's width re-lays the chart out; others
  // (height of the window, a test's synthetic event) only redraw.
  let lastWidth = 0;
  const onResize = () => {
    const w = box.clientWidth;
    if (ec && w !== lastWidth) { lastWidth = w; ec.resize(); }
    schedule();
  };
  stat.redraw = schedule; // bench/web forces a redraw per frame with it
  window.addEventListener('resize', onResize);
  return {
    push,
    get size() { return n; },
    dispose() {
      disposed = true;
      if (raf) cancelAnimationFrame(raf);
      window.removeEventListener('resize', onResize);
      if (ec) ec.dispose();
      if (live.charts[name] === stat) delete live.charts[name];
    },
  };
}
