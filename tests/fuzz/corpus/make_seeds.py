#!/usr/bin/env python3
"""Writes the small synthetic seed files of tests/fuzz/corpus (run from anywhere; standard
library only). The seeds are tiny but complete: a llama GGUF with every supported tensor type
(F32, F16, BF16, Q8_0, Q4_0) and a SentencePiece-style tokenizer, a gpt2 GGUF with a byte-level
BPE tokenizer, and safetensors files with F32/F16/BF16 tensors, metadata and an unsupported I64
buffer; the schemas of tests/data/grammar (llama.cpp's converter cases and the integration
schemas) one per file for fuzz_json_schema, and an answer of each tool-call family for
fuzz_tool_calls (a format byte and a piece-size byte first). The large reference sets
of tools/refs/make_all.py are never copied here."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def gguf_str(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b


def gguf_kv(key, typ, val):
    out = gguf_str(key) + struct.pack('<I', typ)
    if typ == 4:
        out += struct.pack('<I', val)
    elif typ == 6:
        out += struct.pack('<f', val)
    elif typ == 7:
        out += struct.pack('<B', val)
    elif typ == 8:
        out += gguf_str(val)
    elif typ == 9:
        et, items = val
        out += struct.pack('<IQ', et, len(items))
        for it in items:
            if et == 8:
                out += gguf_str(it)
            elif et == 6:
                out += struct.pack('<f', it)
            elif et == 5:
                out += struct.pack('<i', it)
    return out


# ggml type -> (block elems, block bytes)
TYPES = {0: (1, 4), 1: (1, 2), 30: (1, 2), 8: (32, 34), 2: (32, 18)}


def tensor_bytes(typ, ne):
    n = 1
    for x in ne:
        n *= x
    be, bb = TYPES[typ]
    return n // be * bb


def tensor_data(typ, ne, seed):
    nbytes = tensor_bytes(typ, ne)
    if typ in (8, 2):  # blocks: an f16 scale (0.01 = 0x211f) then quants
        be, bb = TYPES[typ]
        blk = struct.pack('<H', 0x211F) + bytes((seed * 7 + i * 13) & 0xFF for i in range(bb - 2))
        return blk * (nbytes // bb)
    if typ == 0:
        n = nbytes // 4
        return b''.join(struct.pack('<f', ((i * 37 + seed) % 17 - 8) / 64.0) for i in range(n))
    # f16 / bf16: small values
    n = nbytes // 2
    if typ == 1:
        return b''.join(struct.pack('<e', ((i * 29 + seed) % 15 - 7) / 64.0) for i in range(n))
    return b''.join(struct.pack('<f', ((i * 29 + seed) % 15 - 7) / 64.0)[2:] for i in range(n))


def gguf_file(kvs, tensors, align=32):
    head = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs))
    for kv in kvs:
        head += gguf_kv(*kv)
    off = 0
    infos = b''
    datas = []
    for i, (name, typ, ne) in enumerate(tensors):
        infos += gguf_str(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', x) for x in ne)
        infos += struct.pack('<IQ', typ, off)
        d = tensor_data(typ, ne, i)
        pad = (-len(d)) % align
        datas.append(d + b'\0' * pad)
        off += len(d) + pad
    body = head + infos
    body += b'\0' * ((-len(body)) % align)
    return body + b''.join(datas)


def llama_seed():
    d, ff, vocab, ctx = 32, 64, 8, 16
    toks = ['<unk>', '<s>', '</s>', '\u2581a', '\u2581b', 'a', 'b', '<0x0A>']
    kvs = [
        ('general.architecture', 8, 'llama'),
        ('llama.block_count', 4, 1),
        ('llama.context_length', 4, ctx),
        ('llama.embedding_length', 4, d),
        ('llama.feed_forward_length', 4, ff),
        ('llama.attention.head_count', 4, 2),
        ('llama.attention.head_count_kv', 4, 1),
        ('llama.attention.layer_norm_rms_epsilon', 6, 1e-5),
        ('llama.rope.dimension_count', 4, 16),
        ('tokenizer.ggml.model', 8, 'llama'),
        ('tokenizer.ggml.tokens', 9, (8, toks)),
        ('tokenizer.ggml.scores', 9, (6, [0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -4.0, 0.0])),
        ('tokenizer.ggml.token_type', 9, (5, [2, 3, 3, 1, 1, 1, 1, 6])),
        ('tokenizer.ggml.bos_token_id', 4, 1),
        ('tokenizer.ggml.eos_token_id', 4, 2),
        ('tokenizer.ggml.add_bos_token', 7, 1),
    ]
    tensors = [
        ('token_embd.weight', 8, [d, vocab]),
        ('output_norm.weight', 0, [d]),
        ('blk.0.attn_norm.weight', 0, [d]),
        ('blk.0.attn_q.weight', 2, [d, d]),
        ('blk.0.attn_k.weight', 1, [d, 16]),
        ('blk.0.attn_v.weight', 30, [d, 16]),
        ('blk.0.attn_output.weight', 0, [d, d]),
        ('blk.0.ffn_norm.weight', 0, [d]),
        ('blk.0.ffn_gate.weight', 8, [d, ff]),
        ('blk.0.ffn_up.weight', 2, [d, ff]),
        ('blk.0.ffn_down.weight', 0, [ff, d]),
    ]
    return gguf_file(kvs, tensors)


def gpt2_tok_seed():
    toks = ['<|endoftext|>', 'a', 'b', 'c', '\u0120', 'ab', '\u0120a', 'abc']
    kvs = [
        ('general.architecture', 8, 'gpt2'),
        ('general.alignment', 4, 64),
        ('tokenizer.ggml.model', 8, 'gpt2'),
        ('tokenizer.ggml.tokens', 9, (8, toks)),
        ('tokenizer.ggml.token_type', 9, (5, [3, 1, 1, 1, 1, 1, 1, 1])),
        ('tokenizer.ggml.merges', 9, (8, ['a b', '\u0120 a', 'ab c'])),
        ('tokenizer.ggml.bos_token_id', 4, 0),
        ('tokenizer.ggml.eos_token_id', 4, 0),
    ]
    return gguf_file(kvs, [('token_embd.weight', 0, [4, 8])], align=64)


def safetensors_file(tensors, metadata=None):
    header = {}
    if metadata:
        header['__metadata__'] = metadata
    data = b''
    for name, dtype, shape, esz in tensors:
        n = esz
        for x in shape:
            n *= x
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + n]}
        data += bytes((i * 7 + len(name)) & 0xFF for i in range(n))
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((-len(h)) % 8)
    return struct.pack('<Q', len(h)) + h + data


def schema_seeds():
    """The schema texts of tests/data/grammar/json_schema.json and integration.json."""
    data = os.path.join(HERE, '..', '..', 'data', 'grammar')
    texts = []
    with open(os.path.join(data, 'json_schema.json'), encoding='utf-8') as f:
        texts += [c['schema'] for c in json.load(f)['cases']]
    with open(os.path.join(data, 'integration.json'), encoding='utf-8') as f:
        texts += [c['schema'] for c in json.load(f)['cases'] if 'schema' in c]
    return {f'json_schema/case{i:03d}.json': t.encode('utf-8') for i, t in enumerate(texts)}


# (format index as vkformer.h numbers them: generic 0, hermes 1, llama3 2, mistral 3, deepseek 4,
# functionary 5; the answer a model of that family writes)
TOOL_ANSWERS = [
    (0, '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}'),
    (0, '{"response": "It is sunny."}'),
    (1, 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        '</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'),
    (2, '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; '
        '{"name": "get_time", "parameters": {}}'),
    (3, '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123XYZ"}]'),
    (3, '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'),
    (4, '<\uff5ctool\u2581calls\u2581begin\uff5c><\uff5ctool\u2581call\u2581begin\uff5c>function'
        '<\uff5ctool\u2581sep\uff5c>get_weather\n```json\n{"city": "Paris"}\n```'
        '<\uff5ctool\u2581call\u2581end\uff5c><\uff5ctool\u2581calls\u2581end\uff5c>'),
    (5, '>>>get_weather\n{"city": "Paris"}>>>all\nDone.'),
    (5, '<function=get_weather>{"city": "Paris"}</function>'),
]


def tool_seeds():
    return {f'tool_calls/answer{i:02d}': bytes([fmt, 7 * i]) + text.encode('utf-8')
            for i, (fmt, text) in enumerate(TOOL_ANSWERS)}


def main():
    out = {
        'gguf/llama-tiny-synthetic.gguf': llama_seed(),
        'gguf/gpt2-tokenizer.gguf': gpt2_tok_seed(),
        'safetensors/mixed.safetensors': safetensors_file(
            [('wte.weight', 'F32', [8, 4], 4), ('h.0.ln_1.weight', 'F16', [4], 2),
             ('h.0.attn.bias', 'BF16', [2, 2], 2), ('position_ids', 'I64', [1, 3], 8),
             ('scalar', 'F32', [], 4), ('empty', 'F32', [0, 4], 4)],
            {'format': 'pt'}),
        'safetensors/single.safetensors': safetensors_file([('w', 'F32', [2, 3], 4)]),
    }
    out.update(schema_seeds())
    out.update(tool_seeds())
    for rel, blob in out.items():
        path = os.path.join(HERE, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(blob)
        print(f'{rel}: {len(blob)} bytes')


if __name__ == '__main__':
    main()
