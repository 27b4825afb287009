#!/usr/bin/env python3
"""README.md against the program: what it states must be what the program does and says.

Usage: test_readme.py SOURCE_DIR BUILD_DIR

- The main job's sample output is the real stdout of `./setup.sh run` (the same command, the
  block after the "output of ./setup.sh run" marker), byte for byte. When the default device is
  not lavapipe, the README's other claim is checked instead: the CPU backend gives that text.
- The defaults README states against `vkformer generate --help` (and `bench --help`,
  include/vkformer.h for the KV cache): -c, -s, -ctk/-ctv, parsed from both sides and compared.
- Every architecture generate --help names is in README's GGUF list and back; --typical is an
  accepted flag in both, never in the refused list; refused flags README names are refused.
Standard library only.
"""
import os
import re
import subprocess
import sys

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


def cli(build, *args):
    r = subprocess.run([os.path.join(build, "vkformer")] + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def help_of(text, flag):
    """the help text of the option line that starts with flag (continuation lines joined)"""
    lines = text.split("\n")
    for i, l in enumerate(lines):
        if re.match(r"\s+" + re.escape(flag), l):
            rest = l
            if i + 1 < len(lines) and re.match(r"\s{20,}\S", lines[i + 1]):
                rest += " " + lines[i + 1].strip()
            return rest
    return ""


def readme_row(readme, first_cell):
    """the notes column of README's llama.cpp table row whose first cell is first_cell"""
    for l in readme.split("\n"):
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] == first_cell:
            return cells[2]
    return ""


def default_phrase(text):
    """what follows "default:" / "default 0:" up to the closing parenthesis, ';' of another
    clause, or the end; normalised (spaces, case, 'more works ...' tails dropped)"""
    m = re.search(r"default(?: 0)?: (.*?)(?:\)|$)", text)
    return re.sub(r"\s+", " ", m.group(1)).strip().lower() if m else None


def main():
    src, build = sys.argv[1], sys.argv[2]
    readme = open(os.path.join(src, "README.md")).read()
    header = open(os.path.join(src, "include", "vkformer.h")).read()

    # ---------------------------------------------------------------- the main job's output
    m = re.search(r"<!-- the output of \./setup\.sh run -->\n```\n(.*?)\n```", readme, re.S)
    check(m is not None, "README: no block after the '<!-- the output of ./setup.sh run -->' marker")
    want = m.group(1) if m else None
    env = dict(os.environ, BUILD_DIR=build)
    r = subprocess.run(["./setup.sh", "run"], cwd=src, env=env, capture_output=True, text=True)
    check(r.returncode == 0, "./setup.sh run: exit %d: %s" % (r.returncode, r.stderr[-500:]))
    if "on llvmpipe" in r.stderr:
        check(r.stdout == want, "./setup.sh run's stdout != README's block:\n%r\n%r" % (r.stdout, want))
    else:  # another device: README's claim for the CPU backend
        rc = subprocess.run(["./setup.sh", "run", "--cpu"], cwd=src, env=env, capture_output=True,
                            text=True)
        check(rc.stdout == want, "./setup.sh run --cpu's stdout != README's block:\n%r" % rc.stdout)

    # ---------------------------------------------------------------- defaults README states
    _, gh, _ = cli(build, "generate", "--help")
    _, ch, _ = cli(build, "chat", "--help")
    _, bh, _ = cli(build, "bench", "--help")
    c_help, c_readme = default_phrase(help_of(gh, "-c,")), default_phrase(readme_row(readme, "`-c N`"))
    check(c_help and c_help.startswith(c_readme or "\0"),
          "-c default: README %r, generate --help %r" % (c_readme, c_help))
    check(c_readme and ("-c` (default: " + c_readme) in re.sub(r"\s+", " ", readme).lower(),
          "-c default: README's context paragraph differs from its table (%r)" % c_readme)
    kv_readme = default_phrase(readme_row(readme, "`-ctk/-ctv` (`--cache-type-k/v`)"))
    for name, text in (("generate --help", gh), ("chat --help", ch), ("bench --help", bh)):
        kv = default_phrase(help_of(text, "-ctk,"))
        check(kv_readme and kv and kv.startswith(kv_readme),
              "KV cache default: README %r, %s %r" % (kv_readme, name, kv))
    hdr = re.search(r"KV cache type.*?\*/", header, re.S)
    hdr = re.sub(r"[\s*]+", " ", hdr.group(0)).lower() if hdr else ""
    check("f16 on every vulkan device" in hdr and "f32 on the cpu backend" in hdr,
          "vkformer.h's KV cache default disagrees with README: %r" % hdr)
    seed_help = help_of(gh, "-s,")
    check("-1 = random (default" in seed_help and "`-1` (default): random" in readme_row(readme, "`-s/--seed S`"),
          "seed default: %r / %r" % (seed_help, readme_row(readme, "`-s/--seed S`")))

    # ---------------------------------------------------------------- flags and architectures
    REFUSED_ROW = ("`-i`, `--mlock`, `--control-vector`, `--mirostat`, `-co/--color`, `--samplers`, "
                   "`--min-keep`, `--dynatemp-range`, `-dkvc`, ...")
    refused = gh.split("llama.cpp flags refused here", 1)[1] if "llama.cpp flags refused here" in gh else ""
    accepted = gh.split("llama.cpp flags refused here", 1)[0]
    check("--typical" in accepted and "--typical" not in refused, "--typical: accepted and not refused")
    check("`--typical`" in readme and "--typical" not in readme_row(readme, REFUSED_ROW),
          "README: --typical accepted, not refused")
    check(readme_row(readme, REFUSED_ROW) != "", "README's row of refused flags: %s" % REFUSED_ROW)
    for flag in re.findall(r"`(-[a-z-]+)", REFUSED_ROW) + ["--color"]:
        check(re.search(r"(^|[ ,])" + re.escape(flag) + r"([ ,]|$)", refused, re.M) is not None,
              "README says %s is refused; generate --help does not list it as refused" % flag)
    m = re.search(r"decoder-only model \(([^)]*)\)", gh)
    help_arch = set(a.strip() for a in m.group(1).split(",")) if m else set()
    m = re.search(r"or a\s+GGUF\s+file\s*\(((?:`[a-z0-9-]+`,?\s*)+);", readme)  # gpt-oss: a hyphen
    readme_arch = set(re.findall(r"`([a-z0-9-]+)`", m.group(1))) if m else set()
    check(help_arch and help_arch == readme_arch,
          "architectures: generate --help %s, README %s" % (sorted(help_arch), sorted(readme_arch)))
    check("../shared" not in readme, "README points at ../shared, which a clone does not have")

    print("test_readme: %d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
