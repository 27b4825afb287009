"""Threads: the GIL is released while the engine runs; several Llama objects in parallel give
their results alone; one Llama used from several threads runs their calls one at a time."""

from __future__ import annotations

import threading
import time

import vkformer

from conftest import KJV


def test_gil_is_released_during_a_library_call(kjv):
    prompt = kjv.tokenize(b"And God said, Let there be light: and there was light.")
    stamps: list[float] = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            stamps.append(time.perf_counter())

    kjv.reset()
    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.01)
    t0 = time.perf_counter()
    kjv._s().eval(prompt)  # one library call (one chunk of the prompt)
    t1 = time.perf_counter()
    stop.set()
    t.join()
    kjv.reset()
    # with the GIL held through the call the other thread could not stamp inside it; the
    # middle 80% of the call leaves the switches at its edges out
    lo, hi = t0 + 0.1 * (t1 - t0), t1 - 0.1 * (t1 - t0)
    inside = [s for s in stamps if lo < s < hi]
    assert t1 - t0 > 0.005 and len(inside) > 100, (t1 - t0, len(inside))


def test_parallel_llamas_give_their_results_alone():
    prompts = {"And God said": 21, "In the beginning": 22, "Let there be": 23}
    with vkformer.Llama(str(KJV), verbose=False) as one:
        alone = {p: one(p, max_tokens=12, seed=s)["choices"][0]["text"]
                 for p, s in prompts.items()}
    results: dict[str, str] = {}
    errors: list[BaseException] = []

    def work(p: str, s: int) -> None:
        try:
            with vkformer.Llama(str(KJV), verbose=False) as llm:
                results[p] = llm(p, max_tokens=12, seed=s)["choices"][0]["text"]
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=i) for i in prompts.items()]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and results == alone


def test_one_llama_from_several_threads_runs_calls_one_at_a_time(kjv):
    jobs = [("And God said", 31), ("And the earth", 32), ("In the beginning", 33)]
    alone = [kjv(p, max_tokens=10, seed=s)["choices"][0]["text"] for p, s in jobs]
    out: list[str | None] = [None] * len(jobs)

    def work(i: int) -> None:
        p, s = jobs[i]
        out[i] = kjv(p, max_tokens=10, seed=s)["choices"][0]["text"]

    ts = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == alone


def test_an_overtaken_stream_says_so(kjv):
    a = kjv("And God said", max_tokens=20, seed=1, stream=True)
    next(a)
    kjv("In the beginning", max_tokens=3, seed=1)
    try:
        for _ in a:
            pass
    except RuntimeError as e:
        assert "overtaken" in str(e)
    else:
        raise AssertionError("the overtaken stream went on")
