"""Makes every reference fixture set of the test suite from its generator, once per machine, and
prints the directory that holds them (the suite's VKF_FIXTURES; `./setup.sh test` runs this).

    python tools/refs/make_all.py              # makes what is missing, prints the directory
    python tools/refs/make_all.py --print-dir  # only prints it (CMake's default VKF_FIXTURES)
    python tools/refs/make_all.py --set arch   # only the sets named (repeatable)

Each set SET of SETS is written by its generator, `tools/refs/make_<SET>.py --out DIR` (a hyphen
of the set's name may be spelled _ in the file name), into
`<references cache>/fixtures-<key>/SET`; the references cache is pins.py's (VKF_REFS_CACHE, else
$XDG_CACHE_HOME/vkformer/refs, else ~/.cache/vkformer/refs). The key hashes everything that
determines the sets: the files of tools/refs/ (the generators, the pins, this table),
tools/real_refs/, tools/llamacpp_ref.py and tests/requirements.txt (the Python packages the
generators run on). A change to any of them makes a new directory; the old ones may be deleted.

A set is made in a temporary directory beside its place and renamed into it; its marker
`.SET.complete` is written last, so a set without one (an interrupted run) is made again and a
set with one is never touched. Runs of this script on one machine take turns (a lock file).
Every set is tried; then the script fails, naming each generator that is missing or failed.
stdout carries only the directory; progress and the generators' output go to stderr.

Developer aid: `--stand-in DIR` links DIR/SET in place of a set whose generator file does not
exist yet (for example an existing fixtures directory), with a marker saying so; a run without
the flag makes such a set again from its generator.

Standard library only (the generators themselves run on this interpreter: run it with the Python
of tests/requirements.txt, build/pyenv/bin/python under ./setup.sh test).
"""
import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, HERE)
import pins  # noqa: E402

# the sets, in the order they are made (a set's tests read only its own directory)
SETS = (
    "llama-tiny",  # llama.cpp-made tiny llama GGUFs (F32, F16, Q8_0, Q4_0) and their logits
    "llama-kv",  # llama.cpp's logits of llama-tiny through each KV cache type (-ctk / -ctv)
    "gpt2-tiny",  # a tiny GPT-2 as GGUF and Hugging Face checkpoint, llama.cpp's logits
    "llama-kq",  # llama-quantize's K-quant / legacy / IQ files of one tiny llama, logits
    "arch",  # tiny models of llama.cpp's other architectures (gemma2/3, phi3, qwen, ...)
    "moe",  # tiny mixture-of-experts models (qwen3moe, qwen2moe, olmoe, Mixtral, gpt-oss, granitemoe)
    "lora",  # LoRA adapters of llama-tiny (PEFT directories, GGUF adapters), llama.cpp's logits
    "real-vocab",  # llama.cpp's real vocabularies with their test strings
    "rerank",  # a tiny BERT cross-encoder (rank pooling) and llama.cpp's scores
    "infill",  # llama.cpp's FIM tokens of real vocabularies and llama-server's /infill prompts
    "chat-templates",  # real models' chat templates and transformers' renders
    "seed-transformer-tiny",  # the encoder-decoder Transformer of the seed task, tiny
    "seed-transformer-base",  # the same, base size
)

# what determines the sets' contents besides the generators (paths relative to the repository)
KEY_INPUTS = ("tools/refs", "tools/real_refs", "tools/llamacpp_ref.py", "tools/gguf_to_hf.py",
              "tests/requirements.txt",
              "tests/data/tokenizers/t5_gguf/vocab.gguf")  # make_rerank.py's XLM-R vocabulary


def log(msg):
    print(f"make_all: {msg}", file=sys.stderr, flush=True)


def _files(rel):
    path = os.path.join(REPO, rel)
    if os.path.isfile(path):
        return [rel]
    out = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if not n.endswith((".pyc", ".pyo")):
                out.append(os.path.relpath(os.path.join(root, n), REPO))
    return out


def key():
    """A hash of the files that determine the sets (names and contents)."""
    h = hashlib.sha256()
    for rel in KEY_INPUTS:
        for f in _files(rel):
            h.update(f.encode() + b"\0")
            with open(os.path.join(REPO, f), "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:16]


def fixtures_dir():
    return os.path.join(pins.cache_dir(), f"fixtures-{key()}")


# sets whose generator makes several sets, or writes its set into a subdirectory of --out:
# set -> (generator file, its extra arguments); such a generator writes DIR/<set>
SHARED_GENERATORS = {
    "real-vocab": ("make_real_vocab.py", []),
    "chat-templates": ("make_chat_templates.py", []),
    "seed-transformer-tiny": ("make_seed_transformer.py", ["--only", "seed-transformer-tiny"]),
    "seed-transformer-base": ("make_seed_transformer.py", ["--only", "seed-transformer-base"]),
}


def generator(name):
    """The generator file of set name and its extra arguments (SHARED_GENERATORS, else
    make_<name>.py, or with _ for -), or (None, None)."""
    if name in SHARED_GENERATORS:
        f, args = SHARED_GENERATORS[name]
        p = os.path.join(HERE, f)
        return (p, args) if os.path.isfile(p) else (None, None)
    for spelling in (name, name.replace("-", "_")):
        p = os.path.join(HERE, f"make_{spelling}.py")
        if os.path.isfile(p):
            return p, []
    return None, None


def marker(top, name):
    return os.path.join(top, f".{name}.complete")


def is_complete(top, name, stand_in_ok):
    m = marker(top, name)
    if not os.path.isfile(m) or not os.path.isdir(os.path.join(top, name)):
        return False
    try:
        with open(m) as f:
            info = json.load(f)
    except (OSError, ValueError):
        return False
    return stand_in_ok or "stand_in" not in info


def remove(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.remove(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def write_marker(top, name, info):
    tmp = marker(top, name) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(info, f)
        f.write("\n")
    os.rename(tmp, marker(top, name))


def make_set(top, name, stand_in):
    """Makes set name in top; returns None, or what went wrong (naming the generator)."""
    dest = os.path.join(top, name)
    gen, gen_args = generator(name)
    remove(marker(top, name))
    remove(dest)
    if gen is None:
        f = SHARED_GENERATORS[name][0] if name in SHARED_GENERATORS else f"make_{name}.py"
        want = os.path.relpath(os.path.join(HERE, f), REPO)
        if stand_in:
            src = os.path.join(os.path.abspath(stand_in), name)
            if not os.path.isdir(src):
                return f"no generator {want}, and the stand-in {src} does not exist"
            os.symlink(src, dest)
            write_marker(top, name, {"set": name, "stand_in": src})
            log(f"{name}: stand-in {src} (no generator {want} yet)")
            return None
        return f"no generator for set {name}: {want} does not exist"
    rel = os.path.relpath(gen, REPO)
    tmp = os.path.join(top, f".tmp-{name}")
    remove(tmp)  # a run interrupted before (runs take turns: it is not in use)
    log(f"{name}: {rel} --out {tmp}")
    t0 = time.monotonic()
    # the generator's stdout to our stderr: stdout carries only the directory
    r = subprocess.run([sys.executable, gen, "--out", tmp] + gen_args, cwd=REPO, stdout=sys.stderr,
                       check=False)
    secs = time.monotonic() - t0
    if r.returncode != 0:
        remove(tmp)
        return f"{rel} failed (exit {r.returncode}) making {name}; its output is above"
    if not os.path.isdir(tmp) or not os.listdir(tmp):
        remove(tmp)
        return f"{rel} exited 0 but wrote nothing into --out {tmp}"
    # a generator of SHARED_GENERATORS writes its set into tmp/<set>
    made = os.path.join(tmp, name) if name in SHARED_GENERATORS else tmp
    if not os.path.isdir(made):
        remove(tmp)
        return f"{rel} exited 0 but wrote no {name}/ into --out {tmp}"
    os.rename(made, dest)
    remove(tmp)
    write_marker(top, name, {"set": name, "generator": rel, "key": os.path.basename(top),
                             "seconds": round(secs, 1)})
    log(f"{name}: made in {secs:.1f} s")
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--print-dir", action="store_true", help="print the directory only, make nothing")
    ap.add_argument("--set", action="append", choices=SETS, help="make only this set (repeatable)")
    ap.add_argument("--stand-in", metavar="DIR",
                    help="developer aid: link DIR/SET for a set whose generator does not exist yet")
    a = ap.parse_args(argv)
    top = fixtures_dir()
    if a.print_dir:
        print(top)
        return 0
    os.makedirs(top, exist_ok=True)
    failed = []
    t0 = time.monotonic()
    with open(os.path.join(top, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in a.set or SETS:
            if is_complete(top, name, a.stand_in is not None):
                continue
            err = make_set(top, name, a.stand_in)
            if err:
                log(f"FAILED: {err}")
                failed.append(err)
    if failed:
        log(f"{len(failed)} of {len(a.set or SETS)} sets not made, in {top}:")
        for e in failed:
            log(f"  {e}")
        return 1
    log(f"all sets in {top} ({time.monotonic() - t0:.1f} s)")
    print(top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
