"""The Docker images are built only by the scripts make test already runs:
CI has no Docker, so this test checks the Dockerfiles instead.

- every RUN of docker/Dockerfile.server and docker/Dockerfile.worker calls
  only this tree's scripts (scripts/*.sh, packaging/*.sh, or
  packaging/install-debs.sh copied into the image), joined by &&: no
  apt-get, pip, curl or other ad hoc step that the tests would not cover
- each script called exists and is executable, and the packages are made by
  packaging/build-debs.sh, the script `make package` and the package test run
- the worker image starts from NVIDIA's PyTorch image (CUDA, NCCL, PyTorch)
- compose.yml has PostgreSQL, the server and a worker that reserves GPUs
"""
import os
import re
import shlex
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import harness  # noqa: E402

SRC = os.path.abspath(os.environ.get("TRAINYARD_SOURCE_DIR",
                                     os.path.join(os.path.dirname(__file__), "..", "..")))
DOCKER = os.path.join(SRC, "docker")
# Paths inside an image that are copies of tree scripts: image path -> tree path.
COPIED = {"/usr/local/sbin/install-debs.sh": "packaging/install-debs.sh"}


def instructions(path):
    """[(INSTRUCTION, argument text)] with continuation lines joined."""
    out, cur = [], ""
    with open(path) as f:
        for line in f:
            s = line.rstrip("\n")
            if not cur and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            cur += s
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


class DockerfilesTest(unittest.TestCase):
    def check_runs_only_scripts(self, name):
        path = os.path.join(DOCKER, name)
        ins = instructions(path)
        runs = [a for w, a in ins if w == "RUN"]
        self.assertTrue(runs, name)
        copies = {}
        for w, a in ins:
            if w == "COPY" and not a.startswith("--from"):
                parts = a.split()
                copies[parts[-1]] = parts[0]
        called = []
        for run in runs:
            self.assertFalse(run.startswith("["), "%s: exec-form RUN %s" % (name, run))
            for cmd in re.split(r"\s*&&\s*", run):
                argv = shlex.split(cmd)
                self.assertTrue(argv, "%s: empty command in RUN %s" % (name, run))
                prog = argv[0]
                if prog in COPIED:
                    self.assertEqual(copies.get(prog), COPIED[prog],
                                     "%s: %s is not copied from %s" % (name, prog, COPIED[prog]))
                    prog = COPIED[prog]
                self.assertRegex(prog, r"^(scripts|packaging)/[\w.-]+\.sh$",
                                 "%s: RUN calls %r, not one of the tree's scripts" % (name, prog))
                tree = os.path.join(SRC, prog)
                self.assertTrue(os.access(tree, os.X_OK), "%s: %s is not executable" % (name, prog))
                for meta in (";", "|", "`", "$(", ">", "<"):
                    self.assertNotIn(meta, cmd, "%s: shell plumbing in RUN %s" % (name, run))
                called.append(prog)
        self.assertIn("packaging/build-debs.sh", called, name)
        self.assertIn("packaging/install-debs.sh", called, name)
        return ins

    def test_server_image(self):
        ins = self.check_runs_only_scripts("Dockerfile.server")
        self.assertTrue(any(w == "FROM" and a.startswith("debian:12") for w, a in ins))
        self.assertIn(("USER", "trainyard"), ins)

    def test_worker_image(self):
        ins = self.check_runs_only_scripts("Dockerfile.worker")
        base = next(a for w, a in ins if w == "ARG" and a.startswith("BASE="))
        self.assertRegex(base, r"^BASE=nvcr\.io/nvidia/pytorch:")

    def test_make_package_uses_the_same_script(self):
        with open(os.path.join(SRC, "Makefile")) as f:
            mk = f.read()
        self.assertRegex(mk, r"\npackage:\n\t@?packaging/build-debs\.sh")

    def test_compose(self):
        with open(os.path.join(DOCKER, "compose.yml")) as f:
            text = f.read()
        services = re.search(r"^services:\n((?:  .*\n|\n)+)", text, re.M).group(1)
        names = re.findall(r"^  (\w[\w-]*):$", services, re.M)
        self.assertEqual(names, ["postgres", "server", "worker"])
        self.assertIn("image: postgres:15", text)
        worker = services[services.index("  worker:"):]
        self.assertIn("driver: nvidia", worker)
        self.assertIn("capabilities: [gpu]", worker)
        self.assertIn("dockerfile: docker/Dockerfile.worker", worker)


if __name__ == "__main__":
    harness.main()
