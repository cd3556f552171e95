// bench_web.mjs - the dashboard's figures in real Chromium on loopback
// (bench/web/README.md): the overview's first load, the job page's time to its first
// chart point, the frame time of the loss chart with 100,000 points, and the
// job list's update time with 1,000 jobs. Prints a table; with --append,
// adds it to bench/RESULTS.md with the machine and the date.
//
//   node bench/web/bench_web.mjs [--append] [--runs N]
//
// It starts its own stack with tests/web/lib.mjs (scripts/run.sh on the
// build in $TRAINYARD_BUILD_DIR, default ./build: the sanitizer build of
// make test unless told otherwise, which the table says).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, newPage, signIn, api, waitFor, SRC, BUILD } from '../../tests/web/lib.mjs';

const args = process.argv.slice(2);
const RUNS = Number((args[args.indexOf('--runs') + 1]) || 5) || 5;
const afters = [];
const t = { after: (f) => afters.push(f), diagnostic: (m) => console.error('#', m) };
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(s.length * p))]; };
const ms = (v) => v.toFixed(1) + ' ms';

async function main() {
  const stack = await startStack(t, 'bench');
  const page = await newPage(stack, { allow: ['/api/v1/queue/what-if'] });
  await signIn(page, stack.base, 'admin', stack.password);
  const rows = [];

  // A job with 100,000 loss points, reported by a real rank through the worker.
  // Paced at 5,000 lines a second: the worker drops the oldest output lines
  // of a full queue (worker/README.md), and a burst of 100,000 lost a third.
  const script = 'import sys, time\nfor i in range(100000):\n    print(\'TRAINYARD_METRIC {"step": %d, "loss": %.6f, "samples_per_s": %.1f}\' % (i, 2.0 / (1 + i / 500.0), 900 + (i % 50)))\n    if i % 500 == 499:\n        sys.stdout.flush()\n        time.sleep(0.1)\nsys.stdout.flush()\n';
  const sub = await api(page, 'POST', '/jobs', { name: 'bench-100k-points', team: 'default', command: ['/usr/bin/python3', '-c', script], resources: { gpus: 1 } });
  if (sub.status !== 201 && sub.status !== 200) throw new Error('submit: ' + JSON.stringify(sub));
  const jobId = sub.body.id;
  const count = async () => {
    let n = 0, after = 0;
    for (;;) {
      const r = (await api(page, 'GET', `/jobs/${jobId}/metrics?limit=5000&after=${after}`)).body.metrics;
      n += r.length;
      if (r.length < 5000) return n;
      after = r[r.length - 1].id;
    }
  };
  await waitFor('the job to end', 900_000, async () => {
    const j = (await api(page, 'GET', `/jobs/${jobId}`)).body;
    return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(j.state) && j.state;
  }, 2000);
  const points = await count();
  t.diagnostic(`job ${jobId} holds ${points} metric points`);
  if (points < 100000) t.diagnostic(`WARNING: ${100000 - points} of the rank's metric lines were dropped on the way`);

  // 1,000 jobs in the list: each wants both GPUs of the node and sleeps,
  // so one runs and the rest stay queued while we measure.
  for (let i = 0; i < 1000; i += 50) {
    await page.evaluate(async ([from, csrf]) => {
      await Promise.all(Array.from({ length: 50 }, (_, k) => fetch('/api/v1/jobs', {
        method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
        body: JSON.stringify({ name: 'bench-list-' + (from + k), team: 'default', command: ['/bin/sleep', '3600'], resources: { gpus: 2 }, priority: 'low' }),
      })));
    }, [i, await page.evaluate(() => sessionStorage.getItem('ty.csrf'))]);
  }

  // 1. The overview's first load: a fresh context each run (no cache), then
  // warm (same context, reload: 304s).
  const ctxOpts = { viewport: { width: 1280, height: 800 } };
  const cookies = await page.context().cookies();
  const cold = [], warm = [];
  for (let i = 0; i < RUNS; i++) {
    const c = await stack.st.browser.newContext(ctxOpts);
    await c.addCookies(cookies);
    const p = await c.newPage();
    await p.goto(stack.base + '#/overview');
    cold.push(await p.waitForFunction(() => window.__ty && window.__ty.overviewDrawnMs, null, { timeout: 60_000 }).then((h) => h.jsonValue()));
    await p.reload();
    warm.push(await p.waitForFunction(() => window.__ty && window.__ty.overviewDrawnMs, null, { timeout: 60_000 }).then((h) => h.jsonValue()));
    await c.close();
  }
  rows.push(['overview first load, cold cache (navigation start to drawn)', ms(median(cold)), ms(Math.max(...cold)), '<= 1000 ms']);
  rows.push(['overview load, warm cache (reload, 304s)', ms(median(warm)), ms(Math.max(...warm)), '']);

  // 2. Job page: time to the first chart point (navigation start).
  const first = [], full = [];
  for (let i = 0; i < RUNS; i++) {
    const c = await stack.st.browser.newContext(ctxOpts);
    await c.addCookies(cookies);
    const p = await c.newPage();
    await p.goto(stack.base + '#/jobs/' + jobId);
    first.push(await p.waitForFunction(() => window.__ty.charts && window.__ty.charts.loss && window.__ty.charts.loss.firstPointMs, null, { timeout: 120_000 }).then((h) => h.jsonValue()));
    full.push(await p.waitForFunction((n) => window.__ty.charts.loss.points >= n && performance.now(), points, { timeout: 300_000 }).then((h) => h.jsonValue()));
    if (i === RUNS - 1) {
      // 3. Frame time at 100,000 points: a redraw every frame for 120
      // frames (LTTB over every point, then ECharts), frame to frame.
      const f = await p.evaluate(() => new Promise((resolve) => {
        const gaps = [], draws = [];
        let last = performance.now(), left = 120;
        const tick = (now) => {
          gaps.push(now - last); last = now;
          draws.push(window.__ty.charts.loss.frameMs);
          if (--left <= 0) { resolve({ gaps: gaps.slice(1), draws, points: window.__ty.charts.loss.points, renderer: window.__ty.charts.loss.renderer }); return; }
          window.__ty.charts.loss.redraw(); // schedules one redraw
          requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      }));
      const idle = await p.evaluate(() => new Promise((resolve) => {
        const gaps = [];
        let last = performance.now(), left = 60;
        const tick = (now) => { gaps.push(now - last); last = now; if (--left <= 0) resolve(gaps.slice(1)); else requestAnimationFrame(tick); };
        requestAnimationFrame(tick);
      }));
      rows.push(['frame to frame with nothing to draw (this browser and machine)', ms(median(idle)), ms(pct(idle, 0.95)) + ' (p95)', '']);
      rows.push([`loss chart frame, ${f.points} points (${f.renderer}), frame to frame`, ms(median(f.gaps)), ms(pct(f.gaps, 0.95)) + ' (p95)', '<= 16.7 ms']);
      rows.push([`loss chart redraw work per frame (LTTB + setOption)`, ms(median(f.draws)), ms(pct(f.draws, 0.95)) + ' (p95)', '']);
    }
    await c.close();
  }
  rows.push([`job page: first loss point (${points} points job)`, ms(median(first)), ms(Math.max(...first)), '']);
  rows.push([`job page: all ${points} points loaded`, ms(median(full)), ms(Math.max(...full)), '']);

  // 4. Job list with 1,000 jobs: first draw, then a polled refresh's
  // longest main-thread task, and the search box's input-to-paint time.
  {
    const c = await stack.st.browser.newContext(ctxOpts);
    await c.addCookies(cookies);
    const p = await c.newPage();
    await p.goto(stack.base + '#/jobs');
    await p.waitForSelector('#jobs-more:not([hidden])');
    for (let k = 0; k < 9; k++) { await p.click('#jobs-more'); await p.waitForTimeout(50); }
    const loaded = await p.waitForFunction(() => document.querySelectorAll('tbody tr[data-key]').length >= 1000 && document.querySelectorAll('tbody tr[data-key]').length, null, { timeout: 120_000 }).then((h) => h.jsonValue());
    const longest = await p.evaluate(() => new Promise((resolve) => {
      const tasks = [];
      const o = new PerformanceObserver((l) => { for (const e of l.getEntries()) tasks.push(e.duration); });
      o.observe({ type: 'longtask', buffered: false });
      setTimeout(() => { o.disconnect(); resolve(tasks.length ? Math.max(...tasks) : 0); }, 10_000);
    }));
    const input = await p.evaluate(async () => {
      const el = document.querySelector('#jobs-search');
      const out = [];
      for (const q of ['bench-list-9', 'bench-list-99', '', 'bench', '']) {
        const t0 = performance.now();
        el.value = q; el.dispatchEvent(new Event('input'));
        await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
        out.push(performance.now() - t0);
      }
      return out;
    });
    rows.push([`job list: ${loaded} rows, longest task during 10 s of 3 s polls`, longest ? ms(longest) : 'none over 50 ms', '', '< 50 ms: no long task']);
    rows.push(['job list: search input to paint, 1,000 rows', ms(median(input)), ms(Math.max(...input)), '<= 100 ms']);
    await c.close();
  }
  await stack.stop();
  return rows;
}

function machine() {
  const cpus = os.cpus();
  let distro = '';
  try { distro = (fs.readFileSync('/etc/os-release', 'utf8').match(/PRETTY_NAME="([^"]+)"/) || [])[1] || ''; } catch (_) { /* none */ }
  return `${distro}, ${cpus.length} cores (${cpus[0] && cpus[0].model}), ${Math.round(os.totalmem() / 2 ** 30)} GiB`;
}

try {
  const rows = await main();
  const build = fs.existsSync(path.join(BUILD, 'CMakeCache.txt')) && /SANITIZE:BOOL=ON/.test(fs.readFileSync(path.join(BUILD, 'CMakeCache.txt'), 'utf8')) ? 'ASan+UBSan build' : 'release build';
  const table = ['| what | median | worst | target |', '|---|---:|---:|---|', ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  console.log(table);
  if (args.includes('--append')) {
    const text = `\n## Dashboard in Chromium (bench/web/bench_web.mjs)\n\nMachine: ${machine()}; date ${new Date().toISOString().slice(0, 10)}; server ${build} on loopback, headless Chromium, ${RUNS} runs each; other people's builds were running on the same cores.\n\`node bench/web/bench_web.mjs --append\`\n\n${table}\n`;
    fs.appendFileSync(path.join(SRC, 'bench/RESULTS.md'), text);
  }
} finally {
  for (const f of afters) await f().catch(() => {});
}
