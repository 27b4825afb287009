#!/usr/bin/env bash
# vkformer set-up: installs the Debian packages it needs (when missing), configures, builds, and
# then runs one of:
#   ./setup.sh run    the main job: generate text with the model shipped in models/ on the
#                     default device (first discrete GPU, else integrated, else lavapipe);
#                     builds quietly (the log only on failure); extra arguments are either the
#                     prompt (./setup.sh run In the beginning) or generate's flags
#                     (./setup.sh run -p "In the beginning" -n 50 --temp 0)
#   ./setup.sh test   the test suite (op harness on Vulkan vs CPU, models vs fixtures, ...) in
#                     BUILD_DIR, including the small-device profile (label mobile) and valgrind
#                     on the CPU path (label valgrind); then the same suite under ASan+UBSan in
#                     a second tree (ASAN_BUILD_DIR, default build-asan; the CMake preset "asan";
#                     lavapipe's own leaks are suppressed by tests/robust/lsan.supp; left out
#                     there: the 20,000-token run (label long), valgrind, the small-device and
#                     GPU-table runs and other shader variants of the same host code (mobile,
#                     gpu_table, variant), Python, the real models and nginx (python, real,
#                     deploy), the format checks (format); the op harness there runs its
#                     representative subset (VKT_OPS_QUICK=1: the host code is what this pass
#                     checks)); then every libFuzzer target of tests/fuzz for
#                     VKF_FUZZ_SECONDS (20) on its seed corpus, side by side, one per CPU (a
#                     third tree, FUZZ_BUILD_DIR, default build-fuzz, built with clang); last,
#                     the aarch64 pass (./setup.sh arm64, below).
#                     Extra arguments go to the first ctest. VKF_TEST_SANITIZE=0,
#                     VKF_FUZZ_SECONDS=0 and VKF_TEST_ARM64=0 skip the last three parts.
#                     Before it, the reference fixtures the tests compare against are made
#                     from pinned public sources by tools/refs/make_all.py (once per machine,
#                     cached: VKF_REFS_CACHE, default ~/.cache/vkformer/refs); VKF_FIXTURES=DIR
#                     runs the suite on an outside set of the same layout instead (an extra
#                     check). No test skips for lack of data: after the runs, the suite fails
#                     when any test skipped for a reason other than an absent device feature
#                     (tests/check_skips.py on ctest's JUnit output).
#   ./setup.sh arm64  the aarch64 pass (the end of `test`; on its own too): adds Debian's arm64
#                     architecture (dpkg --add-architecture), installs the cross compilers
#                     (crossbuild-essential-arm64), qemu-user-static and the arm64 builds of the
#                     libraries the engine links and of Mesa's lavapipe; cross-builds the library,
#                     the CLI and the tests it runs into ARM64_BUILD_DIR (default build-arm64)
#                     with cmake/aarch64-linux-gnu.cmake; then tests/arm64.sh runs them under
#                     qemu-aarch64 on the CPU backend (Debian 12's arm64 lavapipe cannot compile
#                     the kernels; tests/README.md, "ARM64"), comparing greedy output with this
#                     machine's x86 build (BUILD_DIR, its CLI built first when absent) and
#                     building the arm64 Debian packages (cpack -G DEB)
#   ./setup.sh build  set up and build only
# Environment: BUILD_DIR (default build), VKF_WERROR=ON|OFF (default ON for test).
set -euo pipefail
cd "$(dirname "$0")"
mode="${1:-run}"
shift || true

packages=(cmake make gcc g++ pkg-config libvulkan-dev libvulkan-volk-dev glslang-dev glslang-tools
          spirv-tools mesa-vulkan-drivers vulkan-validationlayers libcjson-dev libmicrohttpd-dev
          libedit-dev xz-utils libcurl4-openssl-dev libarchive-dev libssl-dev)
if [ "$mode" = test ]; then # valgrind memcheck, clang with its sanitizer/libFuzzer runtime, the format check,
    # nginx in front of serve replicas (tests/deploy); the Debian packages' test (tests/package_deb.sh:
    # cpack's dpkg-shlibdeps and file, man and groff for the manual page)
    packages+=(valgrind clang libclang-rt-dev curl python3 python3-venv clang-format nginx dpkg-dev file man-db groff-base)
fi
if [ "$mode" = arm64 ]; then
    # the Python test tools (the OpenAI client of the serve check), cpack's dpkg-shlibdeps; the
    # aarch64 cross compilers, qemu, the arm64 libraries and lavapipe (Debian multiarch).
    # spirv-tools and glslang-dev are not Multi-Arch: same in Debian 12 (their arm64 builds would
    # replace the amd64 ones): they are unpacked into the build tree below instead
    packages+=(python3 python3-venv dpkg-dev file crossbuild-essential-arm64 qemu-user-static
               libc6:arm64 libvulkan-dev:arm64 libvulkan1:arm64 mesa-vulkan-drivers:arm64 libcjson-dev:arm64
               libmicrohttpd-dev:arm64 libedit-dev:arm64 libcurl4-openssl-dev:arm64 libarchive-dev:arm64
               libssl-dev:arm64)
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        if [ "$(id -u)" -ne 0 ]; then
            echo "setup: arm64: Debian's arm64 architecture is not enabled; run as root:" >&2
            echo "  sudo dpkg --add-architecture arm64" >&2
            exit 1
        fi
        dpkg --add-architecture arm64
    fi
fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "setup: installing ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
        echo "setup: missing Debian packages; run as root:" >&2
        echo "  sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi

if [ "$mode" = arm64 ] && [ "$(id -u)" -eq 0 ]; then
    # mesa-vulkan-drivers:arm64's ICD files name aarch64 libraries by absolute path: an x86-64
    # Vulkan loader reading them fails to load those and says so, and the x86 suite counts every
    # loader message as a validation failure. Moved aside (dpkg-divert, kept across upgrades) to
    # /usr/share/vulkan/icd.d-arm64, where tests/arm64.sh names lavapipe's (VK_ICD_FILENAMES)
    mkdir -p /usr/share/vulkan/icd.d-arm64
    for f in $(dpkg -L mesa-vulkan-drivers:arm64 | grep '^/usr/share/vulkan/icd\.d/.*\.json$'); do
        dpkg-divert --local --rename --divert "/usr/share/vulkan/icd.d-arm64/${f##*/}" --add "$f" >/dev/null
    done
fi

build="${BUILD_DIR:-build}"
werror="${VKF_WERROR:-ON}"
# what `./setup.sh run` builds: the CLI and the libraries, everything `cmake --install` installs
# (not the tests); tests/install_example.sh checks that this list covers the install rules
run_targets=(vkformer_cli vkformer vkformer_static)
if [ "$mode" = run ]; then
    # quiet: configure once, build only what changed; the log is shown only when it fails
    [ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKF_WERROR="$werror" >/dev/null
    if ! cmake --build "$build" -j"$(nproc)" --target "${run_targets[@]}" >"$build/setup-build.log" 2>&1; then
        cat "$build/setup-build.log" >&2
        exit 1
    fi
else
    if { [ "$mode" = test ] || [ "$mode" = arm64 ]; } && [ -s tests/requirements.txt ]; then
        # Python tools the tests use (pinned in tests/requirements.txt), in a virtual environment
        # of the build tree (tests find it as VKF_PYTHON); made again when the list changes
        pyenv="$build/pyenv"
        want="$(sha256sum tests/requirements.txt | cut -d' ' -f1)"
        if [ ! -x "$pyenv/bin/python" ] || [ "$(cat "$pyenv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
            echo "setup: Python test tools into $pyenv (tests/requirements.txt)" >&2
            mkdir -p "$build"
            python3 -m venv "$pyenv"
            "$pyenv/bin/python" -m pip install -q --disable-pip-version-check -r tests/requirements.txt >&2
            echo "$want" >"$pyenv/.requirements.sha256"
        fi
    fi
    fixtures_arg=()
    if [ "$mode" = test ] || [ "$mode" = arm64 ]; then
        # the reference fixtures (tools/refs/make_all.py, on the Python of tests/requirements.txt),
        # or an outside set named by VKF_FIXTURES
        if [ -n "${VKF_FIXTURES:-}" ]; then
            [ ! -d "$VKF_FIXTURES" ] || VKF_FIXTURES="$(cd "$VKF_FIXTURES" && pwd)"
            echo "setup: reference fixtures: VKF_FIXTURES=$VKF_FIXTURES (an outside set)" >&2
        else
            t0=$SECONDS
            if ! VKF_FIXTURES="$("$build/pyenv/bin/python" tools/refs/make_all.py)"; then
                echo "setup: the reference fixtures could not be made (tools/refs/make_all.py, above)" >&2
                exit 1
            fi
            echo "setup: reference fixtures in $VKF_FIXTURES ($((SECONDS - t0)) s)" >&2
        fi
        export VKF_FIXTURES
        fixtures_arg=(-DVKF_FIXTURES="$VKF_FIXTURES")
    fi
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKF_WERROR="$werror" "${fixtures_arg[@]}" >/dev/null
    if [ "$mode" = arm64 ]; then # the x86 CLI, whose greedy output the arm64 build's must equal
        cmake --build "$build" -j"$(nproc)" --target vkformer_cli >&2
    else
        cmake --build "$build" -j"$(nproc)" >&2
    fi
fi

case "$mode" in
build) ;;
run)
    if [ -d models/kjv-gpt ]; then
        # ./setup.sh run [PROMPT WORDS...] or ./setup.sh run [generate flags: -p, -n, -m, -s, ...]
        if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
            set -- -p "$*"
        fi
        defaults=()
        have() { local f; for f in "$@"; do for a in "${args[@]}"; do [ "$a" = "$f" ] || [ "${a%%=*}" = "$f" ] && return 0; done; done; return 1; }
        args=("$@")
        have -m --model || defaults+=(-m models/kjv-gpt)
        have -p --prompt -f --file || defaults+=(-p "And God said")
        have -n --n-predict || defaults+=(-n 200)
        have --temp || defaults+=(--temp 0.8)
        have -s --seed || defaults+=(--seed 42)
        exec "$build/vkformer" generate "${defaults[@]}" "$@"
    else
        "$build/vkformer" devices
        exec "$build/vkformer" selftest --quick
    fi
    ;;
test)
    status=0
    # lavapipe without LLVM's optimization passes: on a fresh machine (a cold Mesa shader cache)
    # compiling the kernels was most of the suite's time (test_vulkan_runtime 400 -> 216 s of
    # CPU, the op harness's attention cases 48 -> 26 s), while running them is ~14% slower
    # (test_models_llama warm: 10.8 -> 12.3 s); what the tests compare does not depend on it
    export GALLIVM_PERF="${GALLIVM_PERF:-nopt}"
    # every test's whole output in JUnit form, for the skip check below
    junit=(--test-output-size-passed 4194304 --test-output-size-failed 4194304)
    ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "${junit[@]}" \
        --output-junit "$(cd "$build" && pwd)/ctest-junit.xml" "$@" || status=1
    skip_reports=("$build/ctest-junit.xml")
    if [ "${VKF_TEST_SANITIZE:-1}" != 0 ]; then
        asan="${ASAN_BUILD_DIR:-build-asan}"
        echo "setup: the suite under ASan+UBSan in $asan" >&2
        # the Python test tools of the first tree: the serve tests' clients (the server is the
        # sanitized binary)
        cmake -S . -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKF_WERROR="$werror" -DVKF_SANITIZE=ON \
            -DVKF_PYTHON="$(cd "$build" && pwd)/pyenv/bin/python" "${fixtures_arg[@]}" >/dev/null
        cmake --build "$asan" -j"$(nproc)" >&2
        # keep_loaded: dlclose does nothing, so lavapipe's frames stay nameable for lsan.supp
        LD_PRELOAD="$(cd "$asan" && pwd)/tests/libvkt_keep_loaded.so" \
        ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_odr_violation=0:verify_asan_link_order=0" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        LSAN_OPTIONS="suppressions=$PWD/tests/robust/lsan.supp:print_suppressions=0" \
        VKT_OPS_QUICK=1 \
            ctest --test-dir "$asan" --output-on-failure -j"$(nproc)" -LE "long|valgrind|mobile|gpu_table|variant|python|real|deploy|format" \
                -E "^(install_example|package_deb)$" "${junit[@]}" --output-junit "$(cd "$asan" && pwd)/ctest-junit.xml" || status=1
        skip_reports+=("$asan/ctest-junit.xml")
    fi
    # nothing may skip but for an absent device feature (a missing reference fails, naming it)
    python3 tests/check_skips.py "${skip_reports[@]}" || status=1
    fuzz_secs="${VKF_FUZZ_SECONDS:-20}"
    if [ "$fuzz_secs" != 0 ] && command -v clang >/dev/null && command -v clang++ >/dev/null; then
        fuzz="${FUZZ_BUILD_DIR:-build-fuzz}"
        echo "setup: libFuzzer targets, ${fuzz_secs}s each, in $fuzz" >&2
        cmake -S . -B "$fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
            -DVKF_FUZZ=ON >/dev/null
        targets=()
        for f in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
        cmake --build "$fuzz" -j"$(nproc)" --target "${targets[@]}" >&2
        tests/robust/run_fuzz.sh "$fuzz" "$fuzz_secs" || status=1
    fi
    # last, the aarch64 pass (its own mode: root for the arm64 packages; VKF_TEST_ARM64=0 skips)
    if [ "${VKF_TEST_ARM64:-1}" != 0 ]; then
        echo "setup: the aarch64 pass (./setup.sh arm64; VKF_TEST_ARM64=0 skips it)" >&2
        "$0" arm64 || status=1
    fi
    exit $status
    ;;
arm64)
    t0=$SECONDS
    abuild="${ARM64_BUILD_DIR:-build-arm64}"
    # spirv-tools, glslang-dev and glslang-tools (whose glslangValidator glslang's CMake package
    # names) for arm64, unpacked (dpkg-deb -x) rather than installed: a root of their own that
    # the toolchain file searches (VKF_ARM64_EXTRA_ROOT); made again when Debian's versions change
    root="$abuild/arm64-root"
    want="$(apt-cache policy spirv-tools:arm64 glslang-dev:arm64 glslang-tools:arm64 | grep Candidate | tr -d ' \n')"
    if [ "$(cat "$root/.versions" 2>/dev/null)" != "$want" ]; then
        rm -rf "$root" && mkdir -p "$root/debs"
        (cd "$root/debs" && apt-get download -q spirv-tools:arm64 glslang-dev:arm64 glslang-tools:arm64 >&2)
        for d in "$root"/debs/*.deb; do dpkg-deb -x "$d" "$root"; done
        rm -rf "$root/debs"
        echo "$want" >"$root/.versions"
    fi
    cmake -S . -B "$abuild" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
        -DVKF_ARM64_EXTRA_ROOT="$(cd "$root" && pwd)" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DVKF_WERROR="$werror" -DVKF_PYTHON="$(cd "$build" && pwd)/pyenv/bin/python" \
        -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON "${fixtures_arg[@]}" >/dev/null
    # the library, the CLI and the tests tests/arm64.sh runs (not the whole suite: see there;
    # cpack installs what is built, CMAKE_SKIP_INSTALL_ALL_DEPENDENCY: not every test first)
    # shellcheck disable=SC2046
    cmake --build "$abuild" -j"$(nproc)" --target "${run_targets[@]}" $(tests/arm64.sh --targets) >&2
    echo "setup: arm64: set-up and cross build $((SECONDS - t0)) s" >&2
    GALLIVM_PERF="${GALLIVM_PERF:-nopt}" tests/arm64.sh "$abuild" "$build"
    ;;
*)
    echo "usage: ./setup.sh [run|test|arm64|build]" >&2
    exit 2
    ;;
esac
