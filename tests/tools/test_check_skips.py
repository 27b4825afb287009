#!/usr/bin/env python3
"""tests/check_skips.py on ctest's own JUnit output: a scratch CMake project whose tests skip in
each way the suite can (SKIP_RETURN_CODE, a missing executable, a failed fixture test, a part
left out, pytest's -rs summary), run by the ctest of this machine with --output-junit. Only the
skips that name an absent device feature pass; every other is named with its reason.

    python3 tests/tools/test_check_skips.py CTEST
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tests", "check_skips.py")

PROJECT = r"""cmake_minimum_required(VERSION 3.20)
project(skips NONE)
enable_testing()
add_test(NAME %(name)s COMMAND sh -c "%(script)s")
set_tests_properties(%(name)s PROPERTIES SKIP_RETURN_CODE 77)
%(extra)s
"""

failures = []


def run_case(ctest, what, script, expect_ok, expect_in=(), extra=""):
    """A one-test project (plus extra); check_skips on its JUnit output."""
    with tempfile.TemporaryDirectory() as d:
        src, build = os.path.join(d, "src"), os.path.join(d, "build")
        os.makedirs(src)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write(PROJECT % {"name": "t_" + what, "script": script, "extra": extra})
        cmake = os.path.join(os.path.dirname(ctest), "cmake")
        subprocess.run([cmake, "-S", src, "-B", build], check=True, capture_output=True)
        junit = os.path.join(d, "junit.xml")
        subprocess.run([ctest, "--test-dir", build, "--output-junit", junit,
                        "--test-output-size-passed", "1048576"], capture_output=True, check=False)
        r = subprocess.run([sys.executable, CHECK, junit], capture_output=True, text=True, check=False)
        out = r.stdout + r.stderr
        ok = r.returncode == 0
        if ok != expect_ok:
            failures.append(f"{what}: check_skips exit {r.returncode}, expected "
                            f"{'0' if expect_ok else '1'}: {out}")
        for s in expect_in:
            if s not in out:
                failures.append(f"{what}: the message lacks {s!r}: {out}")
        print(f"{what}: exit {r.returncode}")


def main():
    ctest = sys.argv[1] if len(sys.argv) > 1 else "ctest"
    run_case(ctest, "pass", "echo fine", True, ["no skip other than absent device features (0)"])
    run_case(ctest, "device_skip", "echo 'SKIP (device): no Vulkan device'; exit 77", True,
             ["allowed (an absent device feature): t_device_skip: SKIP (device): no Vulkan device"])
    run_case(ctest, "data_skip", "echo 'SKIP: no fixtures at /x'; exit 77", False,
             ["t_data_skip: not run (SKIP_RETURN_CODE=77): SKIP: no fixtures at /x"])
    run_case(ctest, "part_left_out", "echo 'SKIP fixtures: none at /x'; echo '1 passed, 0 failed'",
             False, ["t_part_left_out: left out a part: SKIP fixtures: none at /x"])
    run_case(ctest, "pytest_data",
             "echo '.s.'; echo 'SKIPPED [1] python/tests/test_tokens.py:16: no llama-tiny fixtures'",
             False, ["t_pytest_data: pytest skipped python/tests/test_tokens.py:16: no llama-tiny fixtures"])
    run_case(ctest, "pytest_device",
             "echo 'SKIPPED [1] python/tests/test_interrupt.py:112: device: too fast to interrupt'",
             True, ["test_interrupt.py:112: device: too fast"])
    run_case(ctest, "not_run", "exit 0", False, ["t_missing: not run (Unable to find executable)"],
             extra="add_test(NAME t_missing COMMAND /nonexistent/vkt-program)")
    run_case(ctest, "fixture_failed", "exit 0", False, ["t_needs: not run (Fixture dependency failed)"],
             extra='add_test(NAME t_setup COMMAND sh -c "exit 1")\n'
                   "set_tests_properties(t_setup PROPERTIES FIXTURES_SETUP fx)\n"
                   'add_test(NAME t_needs COMMAND sh -c "exit 0")\n'
                   "set_tests_properties(t_needs PROPERTIES FIXTURES_REQUIRED fx)")
    for f in failures:
        print("FAIL:", f)
    print(f"test_check_skips: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
