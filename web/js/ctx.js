// ctx.js - what a page gets from the router: who is signed in, the route's
// captures, and timers and streams that end when the user leaves the page.
//
//   ctx.me            the user (GET /me): {username, role, teams, ...}
//   ctx.params        captures: ctx.params.id (also ctx.params[0])
//   ctx.query         URLSearchParams of the hash's '?...' part
//   ctx.signal        an AbortSignal aborted on leaving (pass it to fetch)
//   ctx.left          true once the user has left (check after an await)
//   ctx.poll(fn, ms)  fn() now and every ms while the tab is visible; runs
//                     never overlap; returns stop(); stopped on leaving
//   ctx.stream(url, {event: fn(data, ev)}, {onState})
//                     an EventSource on /api/v1 + url (a string, or a function
//                     asked again at each reopen) whose JSON events go to the
//                     handlers; closed on leaving or by the returned close().
//                     A stream the browser gives up on is opened again with
//                     backoff, unless the session ended: then to sign-in
//   ctx.onLeave(fn)   fn() when the user leaves
//   ctx.loaded()      the page has drawn its first data: sets <main
//                     data-loaded>, which the browser tests and bench wait for
//
// Everything here is single-threaded browser code: no locking.

// Live pollers and streams, for the browser tests (leaving must end them).
const live = (window.__ty = window.__ty || {});
live.pollers = 0;
live.streams = 0;

export function makeCtx(base) {
  const leaveFns = [];
  const ac = new AbortController();
  const ctx = Object.assign({}, base, {
    signal: ac.signal,
    left: false,
    onLeave(fn) { if (ctx.left) fn(); else leaveFns.push(fn); },
    poll(fn, ms) {
      let stopped = false, busy = false, id = 0;
      const tick = async () => {
        if (stopped || busy || document.hidden) return;
        busy = true;
        try { await fn(); } catch (_) { /* the page shows its own errors */ }
        busy = false;
      };
      const onVisible = () => { if (!document.hidden) tick(); };
      const stop = () => {
        if (stopped) return;
        stopped = true;
        live.pollers--;
        clearInterval(id);
        document.removeEventListener('visibilitychange', onVisible);
      };
      if (ctx.left) return () => {};
      live.pollers++;
      tick();
      id = setInterval(tick, ms);
      document.addEventListener('visibilitychange', onVisible);
      ctx.onLeave(stop);
      return stop;
    },
    stream(url, handlers, opts = {}) {
      if (ctx.left) return () => {};
      let es = null, closed = false, tries = 0, timer = 0;
      live.streams++;
      const close = () => {
        if (closed) return;
        closed = true;
        live.streams--;
        clearTimeout(timer);
        if (es) es.close();
      };
      const say = (s) => { if (opts.onState && !closed) opts.onState(s); };
      // EventSource gives up for good on an HTTP error and never says which:
      // GET /me tells a 401 (the session ended: sign in again, and come back
      // here after) from anything else (a restart, a 5xx, a proxy), which is
      // opened again after 1, 2, 4 ... 30 s.
      const gaveUp = async () => {
        let status = 0;
        try { status = (await fetch('/api/v1/me', { signal: ac.signal })).status; } catch (_) { /* offline: retry */ }
        if (closed) return;
        if (status === 401) { close(); window.dispatchEvent(new CustomEvent('ty:unauthorized')); return; }
        timer = setTimeout(open, Math.min(30_000, 1000 * 2 ** tries++));
      };
      const open = () => {
        if (closed) return;
        es = new EventSource('/api/v1' + (typeof url === 'function' ? url() : url));
        const mine = es;
        es.addEventListener('open', () => { tries = 0; say('open'); });
        es.addEventListener('error', () => {
          if (closed || mine !== es) return;
          say('reconnecting');
          if (es.readyState === EventSource.CLOSED) gaveUp();
        });
        for (const [name, fn] of Object.entries(handlers)) {
          es.addEventListener(name, (ev) => {
            let data = null;
            try { data = JSON.parse(ev.data); } catch (_) { return; /* skip a bad event */ }
            if (!closed) fn(data, ev, close);
          });
        }
      };
      open();
      ctx.onLeave(close);
      return close;
    },
    _leave() {
      if (ctx.left) return;
      ctx.left = true;
      ac.abort();
      for (const fn of leaveFns.splice(0)) { try { fn(); } catch (_) { /* keep leaving */ } }
    },
  });
  return ctx;
}
