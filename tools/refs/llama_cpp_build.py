"""(Named llama_cpp_build, not llama_cpp: that is the Python binding it loads.)

The pinned llama.cpp (tools/refs/pins.py: llama-cpp-python 0.3.36's sdist = llama.cpp 0c1e570),
built once per machine into the references cache, and the llama.cpp runner the reference
generators use (tools/llamacpp_ref.py, loaded against that build).

    python3 tools/refs/llama_cpp_build.py          # builds (once) and prints the build's library folder

The build is the CPU backend only, no curl/OpenSSL, no common library or tools: libllama (shared,
with libggml*) is all the generators need; quantization goes through llama_model_quantize, the
function llama-quantize calls. The ISA is explicit rather than -march=native, so the result
does not depend on the CPU that builds it: ISA "avx2" = SSE4.2, AVX, AVX2, BMI2, FMA and F16C on,
AVX-VNNI, AVX-512 and AMX off (what an x86-64 CPU with AVX2 but no AVX-512 gets from
-march=native, the build tests/data/ggml-avx2 was made with). llamafile's sgemm stays on, as in
llama.cpp's own default build. The cache folder is keyed by the pin and these flags; the build
runs in a temporary folder renamed into place when complete, so an interrupted build leaves
nothing that looks finished.

Standard library only (it runs before any virtual environment exists); the runner needs numpy.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pins  # noqa: E402

LLAMA_CPP_COMMIT = "0c1e570"
PIN = "llama-cpp-python"

# ISA path -> ggml's CMake switches for it
ISA_FLAGS = {
    "avx2": [
        "-DGGML_NATIVE=OFF",
        "-DGGML_SSE42=ON",
        "-DGGML_AVX=ON",
        "-DGGML_AVX2=ON",
        "-DGGML_BMI2=ON",
        "-DGGML_FMA=ON",
        "-DGGML_F16C=ON",
        "-DGGML_AVX_VNNI=OFF",
        "-DGGML_AVX512=OFF",
        "-DGGML_AVX512_VBMI=OFF",
        "-DGGML_AVX512_VNNI=OFF",
        "-DGGML_AVX512_BF16=OFF",
        "-DGGML_AMX_TILE=OFF",
        "-DGGML_AMX_INT8=OFF",
        "-DGGML_AMX_BF16=OFF",
    ],
}

COMMON_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=ON",
    "-DGGML_CPU=ON",
    "-DGGML_BACKEND_DL=OFF",
    "-DGGML_LLAMAFILE=ON",
    "-DGGML_OPENMP=OFF",
    "-DGGML_BLAS=OFF",
    "-DGGML_CUDA=OFF",
    "-DGGML_VULKAN=OFF",
    "-DGGML_METAL=OFF",
    "-DGGML_OPENCL=OFF",
    "-DGGML_RPC=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_COMMON=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_TOOLS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_SUBPROCESS=OFF",
    "-DLLAMA_ALL_WARNINGS=OFF",
]


def version():
    """The text cases.json names the llama.cpp of its logits with."""
    return f"{LLAMA_CPP_COMMIT} (llama-cpp-python {pins.PINS[PIN][0]})"


def _flags(isa):
    if isa not in ISA_FLAGS:
        raise SystemExit(f"llama_cpp_build: no ISA path {isa!r} (known: {', '.join(ISA_FLAGS)})")
    return COMMON_FLAGS + ISA_FLAGS[isa]


def build_dir(isa="avx2"):
    sha = pins.PINS[PIN][2]
    key = hashlib.sha256("\n".join([PIN, sha] + _flags(isa)).encode()).hexdigest()[:12]
    return os.path.join(pins.cache_dir(), f"llama.cpp-{LLAMA_CPP_COMMIT}-{isa}-{key}")


def build(isa="avx2", quiet=False):
    """The folder holding libllama.so and libggml*.so of the pinned llama.cpp for `isa` (built on
    first use)."""
    dest = build_dir(isa)
    lib = os.path.join(dest, "lib")
    if os.path.isfile(os.path.join(lib, "libllama.so")):
        return lib
    src = pins.llama_cpp_tree()
    tmp = tempfile.mkdtemp(prefix=".build-", dir=pins.cache_dir())
    jobs = str(os.cpu_count() or 1)
    log = os.path.join(tmp, "build.log")
    t0 = time.time()
    if not quiet:
        print(f"llama_cpp_build: building llama.cpp {LLAMA_CPP_COMMIT} ({isa}, -j{jobs}) in {tmp}", file=sys.stderr)
    try:
        bld = os.path.join(tmp, "build")
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        env = dict(os.environ, SOURCE_DATE_EPOCH="0")  # no build-time dependence of the defaults
        with open(log, "w") as lf:
            for cmd in (["cmake", "-S", src, "-B", bld] + gen + _flags(isa),
                        ["cmake", "--build", bld, "--target", "llama", "-j", jobs]):
                lf.write("$ " + " ".join(cmd) + "\n")
                lf.flush()
                r = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, env=env)
                if r.returncode != 0:
                    with open(log) as f:
                        tail = f.read()[-4000:]
                    raise SystemExit(f"llama_cpp_build: `{' '.join(cmd)}` failed ({r.returncode}):\n{tail}")
        out = os.path.join(tmp, "lib")
        os.makedirs(out)
        for root, _, files in os.walk(bld):
            for f in files:
                p = os.path.join(root, f)
                if ".so" in f and (f.startswith("libllama") or f.startswith("libggml")) and not os.path.islink(p):
                    shutil.copy2(p, out)
        for root, _, files in os.walk(bld):  # the sonames' links (libllama.so -> libllama.so.0 ...)
            for f in files:
                p = os.path.join(root, f)
                if os.path.islink(p) and (f.startswith("libllama") or f.startswith("libggml")):
                    q = os.path.join(out, f)
                    if not os.path.lexists(q):
                        os.symlink(os.path.basename(os.readlink(p)), q)
        if not os.path.isfile(os.path.join(out, "libllama.so")):
            raise SystemExit(f"llama_cpp_build: the build in {bld} made no libllama.so")
        with open(os.path.join(tmp, "BUILD.txt"), "w") as f:
            f.write(f"llama.cpp {version()}, ISA {isa}\nflags: {' '.join(_flags(isa))}\n"
                    f"built in {time.time() - t0:.0f} s with -j{jobs}\n")
        shutil.rmtree(bld)
        try:
            os.rename(tmp, dest)
        except OSError:  # another process finished first
            if not os.path.isdir(dest):
                raise
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    if not quiet:
        print(f"llama_cpp_build: built in {time.time() - t0:.0f} s: {lib}", file=sys.stderr)
    return lib


_RUNNER = None


def runner(isa="avx2"):
    """tools/llamacpp_ref.py bound to the pinned build for `isa` (the sdist's Python package on
    sys.path, LLAMA_CPP_LIB_PATH at the build: nothing is pip-installed)."""
    global _RUNNER
    if _RUNNER is None:
        lib = build(isa)
        # libllama's RUNPATH named the (removed) build folder: load its ggml libraries first, by
        # path, so that the loader finds their sonames already loaded
        import ctypes

        for name in ("libggml-base.so.0", "libggml-cpu.so.0", "libggml.so.0"):
            ctypes.CDLL(os.path.join(lib, name), mode=ctypes.RTLD_GLOBAL)
        os.environ["LLAMA_CPP_LIB_PATH"] = lib
        # only the binding's low-level module (llama_cpp/llama_cpp.py: ctypes, needs
        # typing_extensions); the package's __init__ also loads the high-level API, which needs
        # diskcache, jinja2 and more
        import importlib
        import types

        pkg = types.ModuleType("llama_cpp")
        pkg.__path__ = [os.path.join(pins.source(PIN), "llama_cpp")]
        sys.modules["llama_cpp"] = pkg
        low = importlib.import_module("llama_cpp.llama_cpp")
        pkg.__dict__.update({k: v for k, v in vars(low).items() if not k.startswith("__")})
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import llamacpp_ref

        _RUNNER = llamacpp_ref
    return _RUNNER


if __name__ == "__main__":
    isa = sys.argv[1] if len(sys.argv) > 1 else "avx2"
    print(build(isa))
