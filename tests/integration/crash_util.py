"""What the control-plane crash tests (test_crash_*.py) share: a pool of
concurrent submitting clients that sorts every answer into acknowledged,
cut (sent, then the connection died with no answer) or refused (never
reached a server: retried), and the checks that follow a crash.

Not a test itself (ctest runs test_*.py only)."""
import errno
import http.client
import shutil
import socket
import struct
import threading
import time

import harness


def _refused(exc):
    """True when a request never reached a listening server: connect()
    was refused, so nothing was sent and it is safe to send again."""
    return isinstance(exc, ConnectionRefusedError) or getattr(exc, "errno", None) == errno.ECONNREFUSED


class Submitter:
    """nclients threads submit specs[i] (one POST each) through clients
    chosen round robin from urls. A refused connection is tried again
    (bounded by deadline_s); any other failure with no answer counts as
    cut and is not resent; a 503 (the database gone) is tried again too
    and counted. Call start(), then join()."""

    def __init__(self, urls, token, specs, nclients=16, deadline_s=150, retry_503=True):
        self.urls = list(urls)
        self.token = token
        self.specs = list(specs)
        self.nclients = nclients
        self.deadline = time.time() + deadline_s
        self.retry_503 = retry_503
        self.lock = threading.Lock()
        self.next = 0
        self.acked = {}  # name -> job id, answered 201
        self.cut = []  # names sent with no answer
        self.cut_why = []  # (time, exception) of each cut
        self.refused = 0  # connects refused (then tried again)
        self.unavailable = []  # (time, body, seconds taken) of each 503 answer
        self.errors = []  # anything else: fails the test
        self.threads = []

    def _take(self):
        with self.lock:
            if self.next >= len(self.specs):
                return None
            i = self.next
            self.next += 1
            return i

    def _run(self, k):
        try:
            self._submit_all(k)
        except Exception as e:  # a thread that died would hide its submits
            with self.lock:
                self.errors.append(("client %d" % k, repr(e)))

    def _submit_all(self, k):
        while True:
            i = self._take()
            if i is None:
                return
            spec = self.specs[i]
            n = 0
            while True:
                url = self.urls[(k + n) % len(self.urls)]
                n += 1
                c = harness.Client(url, token=self.token)
                t0 = time.time()
                try:
                    st, body, _ = c.post("/api/v1/jobs", spec)
                except (OSError, http.client.HTTPException, AttributeError) as e:
                    # (http.client raises AttributeError when the socket was
                    # closed under a request that was being sent.)
                    if _refused(e) and time.time() < self.deadline:
                        with self.lock:
                            self.refused += 1
                        time.sleep(0.05)  # poll interval while no server listens
                        continue
                    with self.lock:
                        if _refused(e):
                            self.errors.append((spec["name"], "refused past the deadline"))
                        else:
                            self.cut.append(spec["name"])
                            self.cut_why.append((time.time(), repr(e)))
                    break
                with self.lock:
                    if st == 201:
                        self.acked[spec["name"]] = body["id"]
                        break
                    if st == 503 and self.retry_503 and time.time() < self.deadline:
                        self.unavailable.append((time.time(), body, time.time() - t0))
                    else:
                        self.errors.append((spec["name"], st, body))
                        break
                time.sleep(0.05)  # poll interval while the database is gone

    def start(self):
        for k in range(self.nclients):
            t = threading.Thread(target=self._run, args=(k,), daemon=True)
            t.start()
            self.threads.append(t)

    def join(self, timeout):
        end = time.time() + timeout
        for t in self.threads:
            t.join(max(0.0, end - time.time()))
        return not any(t.is_alive() for t in self.threads)

    def nacked(self):
        with self.lock:
            return len(self.acked)


def hold_command(release, marker):
    """A rank that runs until the file release exists (the test creates it
    when it has seen what it wanted); marker, in its command line, finds
    its process."""
    return ["/bin/sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; : %s" % (release, marker)]


def start_workers(test, admin, url, n, gpus, prefix, root):
    st, tok, _ = admin.post("/api/v1/nodes/join-tokens", {"uses": n})
    test.assertEqual(st, 201, tok)
    workers = [harness.Worker(url, tok["token"], "%s%d" % (prefix, i), gpus=gpus,
                              allowed_root=root) for i in range(n)]
    return workers


def wait_nodes_ready(db, n, timeout=60):
    harness.wait_for(lambda: db.sql("SELECT count(*) FROM nodes WHERE state = 'ready'")[0][0]
                     == str(n), timeout=timeout, what="%d nodes ready" % n)


def job_states(db, ids):
    """{state: count} over the job ids."""
    if not ids:
        return {}
    rows = db.sql("SELECT state, count(*) FROM jobs WHERE id IN (%s) GROUP BY state"
                  % ",".join(str(int(i)) for i in ids))
    return {r[0]: int(r[1]) for r in rows}


def wait_all_succeeded(db, ids, timeout, what):
    def done():
        s = job_states(db, ids)
        if s.get("FAILED"):
            print(db.sql("SELECT id, name, reason FROM jobs WHERE state = 'FAILED' LIMIT 5"))
        if s.get("FAILED") or s.get("CANCELLED"):
            raise AssertionError("%s: jobs failed: %r" % (what, s))
        return s.get("SUCCEEDED", 0) == len(ids)
    try:
        harness.wait_for(done, timeout=timeout, interval=0.5, what=what)
    except AssertionError:
        raise AssertionError("%s: %r" % (what, job_states(db, ids)))


def check_acknowledged(test, db, sub, prefix):
    """Every acknowledged submit exists under its id; nothing else exists
    but what was cut (sent, no answer); no submit made two jobs (a 503 that
    was tried again after all committing). Returns the ids of the jobs and
    the names that exist with no 201."""
    rows = db.sql("SELECT name, id FROM jobs WHERE name LIKE '%s%%'" % prefix)
    names = {}
    for name, jid in rows:
        names.setdefault(name, []).append(jid)
    test.assertEqual({n: ids for n, ids in names.items() if len(ids) > 1}, {},
                     "one submit made several jobs")
    for name, jid in sub.acked.items():
        test.assertEqual(names.get(name), [jid], "acknowledged job %s missing" % name)
    extra = set(names) - set(sub.acked)
    test.assertLessEqual(extra, set(sub.cut), "jobs that nobody was told of")
    return [ids[0] for ids in names.values()], extra


def assert_chain_verifies(test, db, client):
    """The server's verify endpoint and the harness's own recomputation."""
    st, v, _ = client.get("/api/v1/audit/verify")
    test.assertEqual(st, 200, v)
    test.assertTrue(v["valid"], v)
    rows = harness.db_audit_rows(db)
    test.assertEqual(harness.verify_chain_rows(rows), 0)
    test.assertEqual(v["checked"], len(rows))
    return len(rows)


def stop_all(workers, servers, db, tmp):
    """What a crash test started, stopped in its finally: the workers and
    servers still running (a server's exit status is checked), the
    database dropped, the scratch directory removed."""
    for w in workers:
        if w.proc.poll() is None:
            w.stop()
    for s in servers:
        if s.proc.poll() is None:
            s.stop()
    db.close()
    shutil.rmtree(tmp, ignore_errors=True)


def record(name, **figures):
    """Print the measured figures in one line the run's log keeps."""
    print("FIGURES %s %s" % (name, " ".join("%s=%s" % kv for kv in sorted(figures.items()))),
          flush=True)


class DropProxy:
    """A loopback TCP proxy in front of a server that cuts, once, the
    connection carrying the first answer that hands out an assignment, before
    any byte of it reaches the client, and then resets every connection for
    DOWN_S: what a worker sees when the server commits a handout and dies
    before answering, then comes back. (Without the second part libcurl
    would send the request again at once on a fresh connection, as it does
    when a reused one dies before answering, and a restarted server would
    not be listening yet.) Everything else passes."""

    DOWN_S = 1.0

    MARK = b'"assignments":[{'

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.dropped = threading.Event()
        self.dropped_at = 0.0
        self.lock = threading.Lock()
        self.closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            if self.dropped.is_set() and time.time() < self.dropped_at + self.DOWN_S:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.close()
                continue
            try:
                u = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                c.close()
                continue
            threading.Thread(target=self._pipe, args=(c, u, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(u, c, True), daemon=True).start()

    def _pipe(self, src, dst, answers):
        # Each socket is read by one thread and written by the other; the
        # first to finish shuts both down, which also wakes the other (a
        # close alone would not while it waits in recv).
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if answers and self.MARK in data:
                    with self.lock:
                        drop = not self.dropped.is_set()
                        if drop:
                            self.dropped_at = time.time()
                            self.dropped.set()
                    if drop:  # no answer at all
                        break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.sock.close()
