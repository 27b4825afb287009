"""A script written for llama-cpp-python's high-level API (its README's calls), unchanged:
test_llama_cpp_script.py runs it with `llama_cpp` resolving to vkformer. Prints one JSON
object with what it got."""

import json
import sys

from llama_cpp import Llama, LlamaGrammar

llm = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, n_gpu_layers=-1, seed=1337,
            verbose=False)

output = llm("Q: Name the planets in the solar system? A: ", max_tokens=32, stop=["Q:", "\n"],
             echo=True)
text = output["choices"][0]["text"]
assert text.startswith("Q: Name the planets")

tokens = llm.tokenize(b"Hello, world!")
assert llm.detokenize(tokens) == b"Hello, world!"

streamed = ""
for chunk in llm("The quick brown fox", max_tokens=16, stream=True):
    streamed += chunk["choices"][0]["text"]

chat = llm.create_chat_completion(
    messages=[
        {"role": "system", "content": "You are an assistant who perfectly describes images."},
        {"role": "user", "content": "Describe this image in detail please."},
    ],
    max_tokens=16,
)
answer = chat["choices"][0]["message"]["content"]

pieces = []
for chunk in llm.create_chat_completion(
        messages=[{"role": "user", "content": "Tell me a story"}], max_tokens=8, stream=True):
    delta = chunk["choices"][0]["delta"]
    if "content" in delta:
        pieces.append(delta["content"])

grammar = LlamaGrammar.from_string('root ::= ("Yea" | "Nay") ", " [a-z]+ "."')
constrained = llm("And he said, ", grammar=grammar, max_tokens=24)["choices"][0]["text"]

llm.reset()
llm.eval(llm.tokenize(b"In the beginning"))
token = llm.sample(temp=0.0)

print(json.dumps({
    "completion": text, "usage": output["usage"], "tokens": tokens, "streamed": streamed,
    "chat": answer, "chat_finish": chat["choices"][0]["finish_reason"],
    "chat_stream": "".join(pieces), "n_ctx": llm.n_ctx(), "n_vocab": llm.n_vocab(),
    "eos": llm.token_eos(), "bos": llm.token_bos(), "sampled": token,
    "constrained": constrained,
}))
