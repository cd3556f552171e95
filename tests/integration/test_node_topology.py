"""What a node can run and how it is connected, end to end: real PostgreSQL,
server and worker (fake GPUs, the real Python probe of /usr/bin/python3).

- register carries "capabilities" equal to what python3 -c says here (torch
  version, FSDP import, DeepSpeed installed: not hard-coded) and
  "interconnect" (this machine's interfaces, from getifaddrs and /sys); both
  show in GET /api/v1/nodes and in the node.register audit event
- a register with a bad interconnect is refused with 400 naming the field,
  and nothing of it is written
- a job placed on the node gets the derived NCCL/gloo env in every rank (the
  script prints os.environ), GET /api/v1/jobs/{id} shows each variable with
  its reason in en and zh-CN, and a variable the job's env sets wins and is
  shown as set by the user
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest, Worker, wait_for  # noqa: E402

PY = "/usr/bin/python3"
KEYS = ["NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_DISABLE",
        "NCCL_P2P_LEVEL", "NCCL_ALGO", "NCCL_PROTO"]
SCRIPT = """import json, os
keys = %r
print("TY_NCCL_ENV " + json.dumps({k: os.environ.get(k) for k in keys}), flush=True)
""" % KEYS


def python_says(code):
    """What /usr/bin/python3 itself reports here, the way an operator would check."""
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout.strip()


class NodeTopologyTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.shared = tempfile.mkdtemp(prefix="ty-shared-")
        os.chmod(cls.shared, 0o755)
        cls.server_args = ("--storage-root", cls.shared, "--sched-interval-ms", "200")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.team
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 2})
        assert st == 201, tok
        cls.worker = Worker(cls.server.url, tok["token"], "topo-1", gpus=2,
                            allowed_root=cls.shared, extra=("--python", PY))
        cls.node = wait_for(lambda: next((n for n in cls.admin.get("/api/v1/nodes")[1]["nodes"]
                                          if n["name"] == "topo-1" and n["state"] == "ready"),
                                         None), what="node topo-1 ready")
        cls.script = os.path.join(cls.shared, "print_env.py")
        with open(cls.script, "w") as f:
            f.write(SCRIPT)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
        finally:
            super().tearDownClass()
            shutil.rmtree(cls.shared, ignore_errors=True)

    def node_row(self):
        return next(n for n in self.admin.get("/api/v1/nodes")[1]["nodes"] if n["name"] == "topo-1")

    def test_1_register_reports_capabilities(self):
        caps = self.node_row()["capabilities"]
        rc, torch_version = python_says("import torch; print(torch.__version__)")
        fsdp_rc, _ = python_says("import torch.distributed.fsdp")
        _, deepspeed = python_says("import importlib.util; "
                                   "print(importlib.util.find_spec('deepspeed') is not None)")
        _, version = python_says("import sys; print('%d.%d.%d' % tuple(sys.version_info[:3]))")
        self.assertEqual(caps["probe"], "ok", caps)
        self.assertEqual(caps["python"], version)
        self.assertEqual(caps["torch"], torch_version if rc == 0 else None)
        self.assertEqual(caps["fsdp"], rc == 0 and fsdp_rc == 0)
        self.assertEqual(caps["deepspeed"], deepspeed == "True")
        print("capabilities here: %s" % json.dumps(caps))
        # The register is audited with the same facts.
        rows = self.db.sql("SELECT details FROM audit_events WHERE action = 'node.register' AND "
                           "target = 'node:topo-1' ORDER BY id DESC LIMIT 1")
        details = json.loads(rows[0][0])
        self.assertEqual(details["torch"], caps["torch"])
        self.assertEqual(details["fsdp"], caps["fsdp"])
        self.assertEqual(details["probe"], "ok")

    def test_2_register_reports_interconnect(self):
        ic = self.node_row()["interconnect"]
        names = [i["name"] for i in ic["interfaces"]]
        self.assertEqual(names, sorted(names))
        lo = next(i for i in ic["interfaces"] if i["name"] == "lo")
        self.assertTrue(lo["loopback"])
        self.assertIn("127.0.0.1/8", lo["addrs"])
        # Every interface the kernel lists (within the report's bound of 32).
        here = sorted(n for _, n in socket.if_nameindex())
        for n in here[:32]:
            self.assertIn(n, names)
        with open("/sys/class/net/lo/mtu") as f:
            self.assertEqual(lo["mtu"], int(f.read()))
        self.assertIsInstance(ic["infiniband"], list)
        # Fake GPUs: no GPU topology is made up.
        self.assertNotIn("p2p", ic)
        self.assertIsNone(self.node_row()["nccl_probe"])

    def test_3_bad_register_is_refused_whole(self):
        with open(os.path.join(self.worker.work_dir, "node.json")) as f:
            cred = json.load(f)["credential"]
        node = Client(self.server.url, token=cred)
        before = self.db.sql("SELECT generation, interconnect::text, capabilities::text FROM "
                             "nodes WHERE name = 'topo-1'")
        body = {"hostname": "h", "addr": "127.0.0.1", "cpus": 2, "memory_mb": 1, "gpus": [],
                "capabilities": {"probe": "ok"},
                "interconnect": {"interfaces": [{"name": "eth0", "addrs": ["10.0.0.300/24"]}]}}
        self.assert_error(node.post("/api/v1/agent/register", body), 400, "invalid_argument",
                          "interconnect.interfaces[0].addrs[0]")
        body["interconnect"] = {}
        body["capabilities"] = {"probe": "ok", "fsdp": "perhaps"}
        self.assert_error(node.post("/api/v1/agent/register", body), 400, "invalid_argument",
                          "capabilities.fsdp")
        body["capabilities"] = {"probe": "ok"}
        body["nccl_probe"] = {"version": 1, "op": "all_reduce"}
        self.assert_error(node.post("/api/v1/agent/register", body), 400, "invalid_argument",
                          "nccl_probe.dtype")
        after = self.db.sql("SELECT generation, interconnect::text, capabilities::text FROM "
                            "nodes WHERE name = 'topo-1'")
        self.assertEqual(before, after)

    def run_job(self, name, env=None):
        spec = {"name": name, "team": "ml", "resources": {"gpus": 2, "gpus_per_node": 2},
                "command": [PY, self.script], "max_restarts": 0}
        if env:
            spec["env"] = env
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)

        def finished():
            j = self.admin.get("/api/v1/jobs/" + job["id"])[1]
            return j if j["state"] in ("SUCCEEDED", "FAILED") else None
        done = wait_for(finished, timeout=120, what="job %s finished" % name)
        self.assertEqual(done["state"], "SUCCEEDED", (done, self.worker.log_tail(20)))
        seen = {}
        for rank in (0, 1):
            logs = self.admin.get("/api/v1/jobs/%s/logs?rank=%d" % (job["id"], rank))[1]["logs"]
            line = next(l["text"] for l in logs if l["text"].startswith("TY_NCCL_ENV "))
            seen[rank] = json.loads(line[len("TY_NCCL_ENV "):])
        self.assertEqual(seen[0], seen[1])
        return done, seen[0]

    def test_4_job_gets_derived_env_with_reasons(self):
        job, env = self.run_job("derived")
        ic = self.node_row()["interconnect"]
        ib_active = [p for p in ic["infiniband"] if p["state"] == "ACTIVE"]
        # The worker registered with --addr 127.0.0.1: rank 0 listens on lo.
        self.assertEqual(env["NCCL_SOCKET_IFNAME"], "=lo")
        self.assertEqual(env["GLOO_SOCKET_IFNAME"], "lo")
        if ib_active:
            self.assertTrue(env["NCCL_IB_HCA"].startswith("="))
            self.assertIsNone(env["NCCL_IB_DISABLE"])
        else:
            self.assertEqual(env["NCCL_IB_DISABLE"], "1")
            self.assertIsNone(env["NCCL_IB_HCA"])
        self.assertIsNone(env["NCCL_P2P_LEVEL"])  # fake GPUs report no topology
        self.assertIsNone(env["NCCL_ALGO"])        # no probe results
        nccl = job["nccl"]
        self.assertEqual(nccl["attempt"], 1)
        self.assertEqual([n["node"] for n in nccl["nodes"]], ["topo-1"])
        variables = {v["name"]: v for v in nccl["nodes"][0]["variables"]}
        self.assertEqual(sorted(variables), sorted(KEYS))
        for k, v in variables.items():
            self.assertEqual(v["value"], env[k], k)  # shown is what the rank got
            self.assertEqual(v["source"], "derived")
            self.assertTrue(v["reason"]["en"] and v["reason"]["zh-CN"], v)
        self.assertIn("holds the rendezvous address 127.0.0.1", variables["NCCL_SOCKET_IFNAME"]
                      ["reason"]["en"])
        self.assertIn("no GPU topology", variables["NCCL_P2P_LEVEL"]["reason"]["en"])
        self.assertIn("trainyard-nccl-probe", variables["NCCL_ALGO"]["reason"]["en"])

    def test_5_user_env_wins(self):
        job, env = self.run_job("override", env={"NCCL_SOCKET_IFNAME": "=ib7",
                                                 "NCCL_IB_DISABLE": "0"})
        self.assertEqual(env["NCCL_SOCKET_IFNAME"], "=ib7")
        self.assertEqual(env["NCCL_IB_DISABLE"], "0")
        self.assertEqual(env["GLOO_SOCKET_IFNAME"], "lo")  # still derived
        self.assertIsNone(env["NCCL_IB_HCA"])  # its partner is not derived either
        variables = {v["name"]: v for v in job["nccl"]["nodes"][0]["variables"]}
        for k in ("NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE"):
            self.assertEqual(variables[k]["source"], "user")
            self.assertEqual(variables[k]["value"], env[k])
            self.assertEqual(variables[k]["reason"], {"en": "set by the user",
                                                      "zh-CN": "由用户设置"})
        self.assertIsNone(variables["NCCL_IB_HCA"]["value"])
        self.assertIn("the user set NCCL_IB_DISABLE", variables["NCCL_IB_HCA"]["reason"]["en"])


if __name__ == "__main__":
    harness.main()
