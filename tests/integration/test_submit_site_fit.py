"""A job that can never run on its site is refused at submit.

More GPUs than the site's nodes have, or a gpus_per_node that too few of
its nodes hold, answers 409 site_too_small naming what the site has (in
the message and in machine-readable params), writes no job, and records a
"job.submit" audit event with outcome "denied". A site with no node yet
still takes jobs: nodes join later. Nodes are registered through SQL as a
worker would; no scheduler pass is needed to refuse."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest  # noqa: E402


class SiteFitTest(ServerTest):
    def add_node(self, name, gpus, state="ready", site="default"):
        self.db.sql("INSERT INTO nodes (name, addr, state, credential_hash, site_id) SELECT "
                    "'%s', '127.0.0.1', '%s', 'h-%s', id FROM sites WHERE name = '%s'"
                    % (name, state, name, site))
        self.db.sql("INSERT INTO gpus (node_id, idx, uuid, model, memory_mb) SELECT id, g, "
                    "'GPU-' || name || g, 'FAKE', 16384 FROM nodes, generate_series(0, %d) g "
                    "WHERE name = '%s'" % (gpus - 1, name))

    def count(self, sql):
        return int(self.db.sql(sql)[0][0])

    def test_refuses_what_the_site_cannot_hold(self):
        self.make_team("fit")
        # No node yet: taken (a node may join later).
        st, early, _ = self.admin.post("/api/v1/jobs", self.job_spec(
            "fit", name="early", resources={"gpus": 64}))
        self.assertEqual(st, 201, early)

        # Two nodes of 2 GPUs and one of 1 (down: it may come back, so it counts).
        self.add_node("fit-a", 2)
        self.add_node("fit-b", 2, state="draining")
        self.add_node("fit-c", 1, state="down")
        jobs = self.count("SELECT count(*) FROM jobs")
        denied = self.count("SELECT count(*) FROM audit_events WHERE action = 'job.submit' "
                            "AND outcome = 'denied'")

        err = self.assert_error(self.admin.post("/api/v1/jobs", self.job_spec(
            "fit", name="too-many", resources={"gpus": 6})), 409, "site_too_small",
            "resources.gpus")
        self.assertIn('site "default" has 5 GPUs on 3 nodes', err["message"])
        self.assertEqual(err["params"], {
            "site": "default", "gpus": 6, "gpus_per_node": 0, "site_nodes": 3, "site_gpus": 5,
            "largest_node_gpus": 2, "nodes_with_gpus_per_node": 3})

        # Enough GPUs in all, but no node holds 3 of them.
        err = self.assert_error(self.admin.post("/api/v1/jobs", self.job_spec(
            "fit", name="too-wide", resources={"gpus": 3, "gpus_per_node": 3})), 409,
            "site_too_small", "resources.gpus_per_node")
        self.assertEqual(err["params"]["largest_node_gpus"], 2)
        self.assertEqual(err["params"]["nodes_with_gpus_per_node"], 0)
        # 4 GPUs of the 5, but one on each of 4 nodes: the site has 3.
        err = self.assert_error(self.admin.post("/api/v1/jobs", self.job_spec(
            "fit", name="too-many-nodes", resources={"gpus": 4, "gpus_per_node": 1})), 409,
            "site_too_small", "resources.gpus_per_node")
        self.assertEqual(err["params"]["nodes_with_gpus_per_node"], 3)
        # Nothing written, each refusal audited with what the site has.
        self.assertEqual(self.count("SELECT count(*) FROM jobs"), jobs)
        rows = self.db.sql("SELECT target, details::jsonb->>'reason', details::jsonb->>'site_gpus', "
                           "details::jsonb->>'job_name' FROM audit_events WHERE action = 'job.submit' "
                           "AND outcome = 'denied' ORDER BY id")
        self.assertEqual(len(rows), denied + 3, rows)
        self.assertEqual(rows[-3], ["team:fit", "site_too_small", "5", "too-many"])
        self.assertEqual([r[3] for r in rows[-2:]], ["too-wide", "too-many-nodes"])
        self.assertEqual(harness.verify_chain_rows(harness.db_audit_rows(self.db)), 0)

        # What fits is taken: all five GPUs, and 2 per node on the two 2-GPU nodes.
        for name, res in (("all", {"gpus": 5}), ("pairs", {"gpus": 4, "gpus_per_node": 2})):
            st, body, _ = self.admin.post("/api/v1/jobs", self.job_spec("fit", name=name,
                                                                        resources=res))
            self.assertEqual(st, 201, body)

    def test_another_site_counts_only_its_nodes(self):
        self.make_team("fit2")
        st, body, _ = self.admin.post("/api/v1/sites", {"name": "small",
                                                         "storage_roots": ["/srv/small"]})
        self.assertEqual(st, 201, body)
        st, body, _ = self.admin.post("/api/v1/sites", {"name": "large",
                                                         "storage_roots": ["/srv/large"]})
        self.assertEqual(st, 201, body)
        self.add_node("small-a", 1, site="small")
        self.add_node("large-a", 8, site="large")
        err = self.assert_error(self.admin.post("/api/v1/jobs", self.job_spec(
            "fit2", name="big-on-small", site="small", resources={"gpus": 2})), 409,
            "site_too_small", "resources.gpus")
        self.assertEqual((err["params"]["site"], err["params"]["site_gpus"]), ("small", 1))


if __name__ == "__main__":
    harness.main()
