"""Shared pieces of the structured-output tests: a server on a free port (../pyhelpers.py, as
the checks) and its requests, and the JSON Schema validator (python-jsonschema, pinned in
tests/requirements.txt)."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyhelpers  # noqa: E402
from pyhelpers import FAILS, check, finish  # noqa: E402,F401  (the tests import them from here)


def validator(schema):
    """A Draft 2020-12 validator checking the formats the grammar writes (date, time,
    date-time, uuid): jsonschema checks date and uuid itself; time and date-time by the RFC 3339
    patterns below, since its own checks need packages the tests do not install."""
    import jsonschema

    fc = jsonschema.FormatChecker()
    rfc_time = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")

    @fc.checks("time")
    def _time(s):
        return not isinstance(s, str) or bool(rfc_time.match(s))

    @fc.checks("date-time")
    def _dt(s):
        if not isinstance(s, str) or "T" not in s:
            return not isinstance(s, str)
        d, t = s.split("T", 1)
        return bool(re.match(r"^\d{4}-\d{2}-\d{2}$", d)) and bool(rfc_time.match(t))

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=fc)


class Server(pyhelpers.Server):
    """vkformer serve on a free loopback port (read from its stderr)."""

    def __init__(self, exe, model, extra=(), env=None):
        super().__init__(exe, model, extra, env=env, timeout=180)  # a real model on lavapipe

    def post(self, path, body):
        import http.client

        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        text = r.read().decode("utf-8", "replace")
        c.close()
        if body.get("stream"):
            return r.status, text
        try:
            return r.status, json.loads(text)
        except ValueError:
            return r.status, text

    def stream_chunks(self, body):
        """the JSON chunks of a streamed request (data: lines, [DONE] last)"""
        status, text = self.post("/v1/chat/completions", dict(body, stream=True))
        check(status == 200, "stream status %s: %s" % (status, text[:300]))
        events = [e[6:] for e in text.split("\n\n") if e.startswith("data: ")]
        check(events and events[-1] == "[DONE]", "a stream ends with [DONE]")
        return [json.loads(e) for e in events if e != "[DONE]"]

    def stop(self):
        super().stop(timeout=30)


def add_up(chunks):
    """OpenAI's stream accumulation: content concatenated; tool calls by index, the id and name
    from their first delta, the arguments concatenated; the last finish_reason"""
    content, calls, fin = None, [], None
    for ch in chunks:
        c = ch["choices"][0]
        d = c.get("delta", {})
        if d.get("content"):
            content = (content or "") + d["content"]
        for tc in d.get("tool_calls") or []:
            i = tc["index"]
            if i == len(calls):
                calls.append({"id": tc["id"], "type": tc["type"],
                              "function": {"name": tc["function"]["name"], "arguments": ""}})
            elif "id" in tc:
                check(False, "only the first delta of a call carries its id")
            calls[i]["function"]["arguments"] += tc["function"].get("arguments", "")
        if c.get("finish_reason"):
            fin = c["finish_reason"]
    return content, calls, fin
