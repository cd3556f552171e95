"""Shell completion for the trainyard CLI (cli/completion/):

- the bash script parses (bash -n), loads, registers `complete -F
  _trainyard trainyard`, and completes commands, subcommands and option
  values the way a user types them
- the zsh script parses (zsh -n) and compinit registers it for trainyard
  (zsh comes from scripts/deps.sh test)
- both name exactly the commands that `trainyard help` lists, so a new
  command cannot be forgotten in either
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import CLI_BIN  # noqa: E402

DIR = os.path.join(os.path.abspath(harness.SRC), "cli", "completion")
BASH = os.path.join(DIR, "trainyard.bash")
ZSH = os.path.join(DIR, "_trainyard")


def help_commands():
    out = subprocess.run([CLI_BIN, "help"], capture_output=True, text=True,
                         env=dict(os.environ, LC_ALL="C"), check=True).stdout
    block = out.split("\n\n")[1]
    return [l.split()[0] for l in block.splitlines()[1:]]


class CompletionTest(unittest.TestCase):
    def complete_bash(self, *words):
        script = ('source %s\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_trainyard\n'
                  'printf "%%s\\n" "${COMPREPLY[@]}"\n') % (
            BASH, " ".join("'%s'" % w for w in words), len(words) - 1)
        out = subprocess.run(["bash", "--norc", "--noprofile", "-c", script],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        return [l for l in out.stdout.splitlines() if l]

    def test_bash(self):
        out = subprocess.run(["bash", "-n", BASH], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        out = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                              "source %s && complete -p trainyard" % BASH],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "complete -F _trainyard trainyard")
        self.assertEqual(self.complete_bash("trainyard", "l"), ["login", "logout", "ls", "logs"])
        self.assertEqual(self.complete_bash("trainyard", ""), help_commands())
        self.assertEqual(self.complete_bash("trainyard", "tokens", ""), ["list", "create", "revoke"])
        self.assertEqual(self.complete_bash("trainyard", "audit", "e"), ["export"])
        self.assertEqual(self.complete_bash("trainyard", "models", ""),
                         ["list", "show", "register", "alias"])
        self.assertEqual(self.complete_bash("trainyard", "models", "register", "m", "--c"),
                         ["--checkpoint"])
        self.assertEqual(self.complete_bash("trainyard", "models", "alias", "m", "p", "--d"),
                         ["--delete"])
        self.assertEqual(self.complete_bash("trainyard", "ls", "--state", "RU"), ["RUNNING"])
        self.assertIn("--rank", self.complete_bash("trainyard", "logs", "42", "--r"))
        self.assertEqual(self.complete_bash("trainyard", "logs", "42", "--stream", "s"),
                         ["stdout", "stderr"])

    def test_zsh(self):
        zsh = shutil.which("zsh")
        self.assertIsNotNone(zsh, "zsh is missing: scripts/deps.sh test installs it")
        out = subprocess.run([zsh, "-n", ZSH], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        tmp = tempfile.mkdtemp(prefix="ty-zsh-")
        try:
            out = subprocess.run(
                [zsh, "-f", "-c", "fpath=(%s $fpath); autoload -Uz compinit; "
                 "compinit -u -d %s/zcompdump; print -r -- $_comps[trainyard]" % (DIR, tmp)],
                capture_output=True, text=True, timeout=60, env=dict(os.environ, HOME=tmp))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "_trainyard")

    def test_same_commands_as_help(self):
        cmds = help_commands()
        self.assertIn("logs", cmds)
        with open(BASH) as f:
            bash = re.search(r'local commands="([^"]*)"', f.read()).group(1).split()
        self.assertEqual(bash, cmds)
        with open(ZSH) as f:
            zsh = re.findall(r"^\s+'([a-z]+):", f.read(), re.M)
        self.assertEqual(zsh, cmds)


if __name__ == "__main__":
    harness.main()
