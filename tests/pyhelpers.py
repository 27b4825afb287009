"""Shared by the Python test scripts (tests/serve, tests/structured): failed checks and their
summary, and `vkformer serve` on a free loopback port. Standard library only: the serve tests
run on the system's python3.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from pyhelpers import FAILS, check, ...
"""
import http.client
import json
import re
import signal
import subprocess
import sys
import threading
import time

FAILS = []  # what failed, in order
SERVERS = []  # every server started: kill_servers ends them, so a failed check leaves none running


def check(cond, what, file=None):
    """Notes a failed check (FAILS) and prints it at once ("FAIL: what", on stdout unless file);
    returns cond."""
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=file or sys.stdout, flush=True)
    return cond



def request(port, method, path, body=None, timeout=600):
    """One HTTP request to a local server: (status, the body as JSON, or as text when it is
    not JSON)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    text = r.read().decode("utf-8", "replace")
    c.close()
    try:
        return r.status, json.loads(text)
    except ValueError:
        return r.status, text


def kill_servers():
    for p in SERVERS:
        if p.poll() is None:
            p.kill()


def finish(name):
    """Ends the script: servers killed, "NAME: all passed" or "NAME: N failed", exit 1 on any."""
    kill_servers()
    print("%s: %s" % (name, "%d failed" % len(FAILS) if FAILS else "all passed"), flush=True)
    sys.exit(1 if FAILS else 0)


def serve(exe, model, extra=(), env=None, timeout=120, stdout=subprocess.DEVNULL, sink=None):
    """Starts `EXE serve -m MODEL --port 0 EXTRA...` (registered in SERVERS) and reads its stderr
    until "listening on http://HOST:PORT", for at most timeout seconds (model load and pipeline
    compilation on lavapipe). Returns (process, port, log): log holds the stderr lines read;
    once the server listens, a thread passes the rest to sink (default: appends them to log).
    port is None when the server exited or the time ran out first (the process is left as it
    is: the caller reports, kills or waits)."""
    p = subprocess.Popen([exe, "serve", "-m", model, "--port", "0"] + list(extra), stdout=stdout,
                         stderr=subprocess.PIPE, text=True, env=env)
    SERVERS.append(p)
    log, port = [], None
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        log.append(line)
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    if port is not None:
        sink = sink or log.append
        threading.Thread(target=lambda: [sink(x) for x in p.stderr], daemon=True).start()
    return p, port, log


class Server:
    """vkformer serve on a free loopback port (serve); SystemExit with its log when it does not
    start. key: the --api-key among extra, if any."""

    def __init__(self, exe, model, extra=(), env=None, timeout=120):
        self.key = extra[extra.index("--api-key") + 1] if "--api-key" in extra else None
        self.p, self.port, self.log = serve(exe, model, extra, env=env, timeout=timeout)
        if self.port is None:
            raise SystemExit("server did not start: " + "".join(self.log))

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Sends sig and waits for the exit: its status, or -999 when it had to be killed."""
        self.p.send_signal(sig)
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return -999
