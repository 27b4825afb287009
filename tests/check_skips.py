"""Fails a test run in which anything skipped for a reason other than an absent device feature.

    python3 tests/check_skips.py JUNIT.xml...   (ctest --output-junit, as ./setup.sh test writes it)

The suite's rule: no test skips for lack of data (a missing reference fails, naming its path);
a skip may only name a device feature that is absent. What counts as a skip, and how a device
skip says so:
- a ctest test that did not run (its SKIP_RETURN_CODE, a missing executable, a failed fixture
  test it depends on): allowed only when its output has a line `SKIP (device): <feature>`;
- a line of a test's output beginning with `SKIP` (a part of a test left out): only
  `SKIP (device): <feature>`;
- a pytest skip (`SKIPPED [n] file:line: reason`, the -rs summary python_pytest prints): only
  a reason beginning `device:`.
Each offending test is named with its reason; exit status 1 then, else 0. The tests' output must
be in the file whole: ./setup.sh test raises ctest's --test-output-size-passed/-failed.
Standard library only.
"""
import re
import sys
import xml.etree.ElementTree as ET

DEVICE_LINE = re.compile(r"^\s*SKIP \(device\): ")
SKIP_LINE = re.compile(r"^\s*SKIP\b")
PYTEST_SKIP = re.compile(r"^SKIPPED \[\d+\] (\S+?:\d+): (.*)$")


def reason_of(lines, fallback):
    """The output's last SKIP-ish line, or the last line, else fallback."""
    for ln in reversed(lines):
        if SKIP_LINE.match(ln) or "skip" in ln.lower():
            return ln.strip()
    for ln in reversed(lines):
        if ln.strip():
            return ln.strip()
    return fallback


def check(paths):
    """(offences, device skips): lists of 'test: reason' strings."""
    bad, device = [], []
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            bad.append(f"{path}: cannot read the test results ({e})")
            continue
        for tc in root.iter("testcase"):
            name = tc.get("name", "?")
            out = tc.findtext("system-out") or ""
            lines = out.splitlines()
            skipped = tc.find("skipped")
            if tc.get("status") in ("notrun", "disabled") or skipped is not None:
                why = skipped.get("message", "") if skipped is not None else tc.get("status", "")
                dev = [ln.strip() for ln in lines if DEVICE_LINE.match(ln)]
                if dev:
                    device.append(f"{name}: {dev[-1]}")
                else:
                    bad.append(f"{name}: not run ({why}): {reason_of(lines, why)}")
                continue
            for ln in lines:
                m = PYTEST_SKIP.match(ln.strip())
                if m:
                    where, why = m.groups()
                    if why.startswith("device:"):
                        device.append(f"{name}: {where}: {why}")
                    else:
                        bad.append(f"{name}: pytest skipped {where}: {why}")
                elif DEVICE_LINE.match(ln):
                    device.append(f"{name}: {ln.strip()}")
                elif SKIP_LINE.match(ln):
                    bad.append(f"{name}: left out a part: {ln.strip()}")
    return bad, device


def main(argv):
    if not argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    bad, device = check(argv)
    for d in device:
        print(f"check_skips: allowed (an absent device feature): {d}")
    if bad:
        print(f"check_skips: FAIL: {len(bad)} skip(s) for a reason other than an absent device "
              "feature (a missing reference, model, tool or package must be provided, not skipped):",
              file=sys.stderr)
        for b in bad:
            print(f"  {b}", file=sys.stderr)
        return 1
    print(f"check_skips: no skip other than absent device features ({len(device)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
