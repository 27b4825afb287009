#!/usr/bin/env python3
"""tools/refs/make_all.py in a scratch copy of the repository's layout (tools/refs with stand-in
generators that count their runs) and a scratch references cache: a set is made once and then
left alone; a failed or missing generator fails the run naming it and leaves no set, marker or
temporary directory behind; a set without its marker (an interrupted run) is made again; the
directory follows the generators' contents; --stand-in links a set whose generator is missing,
and a run without the flag does not take the link as made.

    python3 tests/tools/test_make_all.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GOOD = """import argparse, os
a = argparse.ArgumentParser(); a.add_argument("--out", required=True); o = a.parse_args()
with open(os.path.join(os.environ["COUNT_DIR"], "%(set)s"), "a") as f:
    f.write("run\\n")
os.makedirs(o.out)
with open(os.path.join(o.out, "cases.json"), "w") as f:
    f.write("[]")
print("made %(set)s")
"""
BAD = """import argparse, os, sys
a = argparse.ArgumentParser(); a.add_argument("--out", required=True); o = a.parse_args()
os.makedirs(o.out)
print("half-made, then a failure")
sys.exit(3)
"""

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def main():
    with tempfile.TemporaryDirectory() as d:
        repo, cache, counts = (os.path.join(d, x) for x in ("repo", "cache", "counts"))
        refs = os.path.join(repo, "tools", "refs")
        os.makedirs(refs)
        os.makedirs(counts)
        for f in ("make_all.py", "pins.py"):
            shutil.copy(os.path.join(ROOT, "tools", "refs", f), refs)
        with open(os.path.join(refs, "make_llama_tiny.py"), "w") as f:  # the _ spelling
            f.write(GOOD % {"set": "llama-tiny"})
        with open(os.path.join(refs, "make_arch.py"), "w") as f:
            f.write(BAD)
        env = dict(os.environ, VKF_REFS_CACHE=cache, COUNT_DIR=counts)
        tool = os.path.join(refs, "make_all.py")

        def run(*args):
            r = subprocess.run([sys.executable, tool, *args], env=env, capture_output=True, text=True,
                               check=False)
            return r.returncode, r.stdout.strip(), r.stderr

        def runs(name):
            p = os.path.join(counts, name)
            return open(p).read().count("run") if os.path.exists(p) else 0

        rc, top, err = run("--print-dir")
        check(rc == 0 and top.startswith(os.path.join(cache, "fixtures-")), f"--print-dir: {top}")
        rc, out, err = run("--set", "llama-tiny")
        check(rc == 0 and out == top, "a set made: the directory printed, alone on stdout")
        check(os.path.isfile(os.path.join(top, "llama-tiny", "cases.json")) and
              os.path.isfile(os.path.join(top, ".llama-tiny.complete")), "the set and its marker")
        check("made llama-tiny" in err, "the generator's output goes to stderr")
        run("--set", "llama-tiny")
        check(runs("llama-tiny") == 1, "a complete set is not made again")

        rc, out, err = run("--set", "arch", "--set", "gpt2-tiny")
        check(rc == 1 and out == "", "failed generators: exit 1, nothing on stdout")
        check("tools/refs/make_arch.py failed (exit 3) making arch" in err, "the failed generator named")
        check("no generator for set gpt2-tiny: tools/refs/make_gpt2-tiny.py does not exist" in err,
              "the missing generator named")
        check(not os.path.exists(os.path.join(top, "arch")) and
              not os.path.exists(os.path.join(top, ".arch.complete")) and
              not os.path.exists(os.path.join(top, ".tmp-arch")), "a failed set leaves nothing")

        os.remove(os.path.join(top, ".llama-tiny.complete"))  # as if interrupted before the marker
        rc, out, err = run("--set", "llama-tiny")
        check(rc == 0 and runs("llama-tiny") == 2, "a set without its marker is made again")

        with open(os.path.join(refs, "make_llama_tiny.py"), "a") as f:
            f.write("# changed\n")
        rc, top2, err = run("--print-dir")
        check(top2 != top, "a changed generator: another directory")

        fake = os.path.join(d, "outside")
        os.makedirs(os.path.join(fake, "gpt2-tiny"))
        rc, out, err = run("--set", "gpt2-tiny", "--stand-in", fake)
        check(rc == 0 and os.path.realpath(os.path.join(top2, "gpt2-tiny")) ==
              os.path.join(os.path.realpath(fake), "gpt2-tiny"), "--stand-in links the set")
        rc, out, err = run("--set", "gpt2-tiny")
        check(rc == 1 and "make_gpt2-tiny.py does not exist" in err and
              os.path.isdir(os.path.join(fake, "gpt2-tiny")),
              "without --stand-in a linked set is not taken as made (the outside set untouched)")
    print(f"test_make_all: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
