// Records the Hugging Face `tokenizers` library's ids and decodes for the test corpus and the
// 1 MiB text, for every tokenizer.json kind (and for gpt2_files, loaded as the library loads GPT-2's
// vocab.json + merges.txt: BPE + ByteLevel pre-tokenizer without prefix space + ByteLevel
// decoder + <|endoftext|> as a special token).
//
//   node tools/tokenizers/ref_hf.js DATA_DIR BIG_TXT [KIND ...]   (run by make_data.sh)
//
// With KIND arguments only those kinds are recorded. A kind directory with tokenizer.json.xz
// (the real Llama-3 and Qwen3 files, see fetch_real.sh) is decompressed with xz first.
//
// Writes DATA_DIR/<kind>/expected.json:
//   {"reference": "...", "ids": [[...] per corpus string, add_special_tokens = true],
//    "ids_plain": [[...] add_special_tokens = false], "decoded": [decode(ids, skip_special = true)],
//    "big": {"bytes": N, "n_ids": N, "fnv1a64": "hex of the ids as little-endian int32"}}
'use strict';
const fs = require('fs');
const path = require('path');
const tkPath = process.env.TOKREF || '/tmp/tokref/node_modules/tokenizers';
const tk = require(tkPath);
const version = JSON.parse(fs.readFileSync(path.join(tkPath, 'package.json'), 'utf8')).version;

const [dataDir, bigPath, ...only] = process.argv.slice(2);
const corpus = JSON.parse(fs.readFileSync(path.join(dataDir, 'corpus.json'), 'utf8'));
const big = fs.readFileSync(bigPath, 'utf8');

function fnv1a64(ids) {
  let h = 0xcbf29ce484222325n;
  const p = 0x100000001b3n, m = (1n << 64n) - 1n;
  for (const id of ids) {
    let v = id >>> 0;
    for (let k = 0; k < 4; k++) {
      h ^= BigInt(v & 0xff);
      h = (h * p) & m;
      v >>>= 8;
    }
  }
  return h.toString(16).padStart(16, '0');
}

async function gpt2FromFiles(dir) {
  const t = new tk.Tokenizer(await tk.BPE.fromFile(path.join(dir, 'vocab.json'), path.join(dir, 'merges.txt'), {}));
  t.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));
  t.addSpecialTokens(['<|endoftext|>']);
  const tmp = path.join(require('os').tmpdir(), 'vkf_gpt2_' + process.pid + '.json');
  t.save(tmp);
  const j = JSON.parse(fs.readFileSync(tmp, 'utf8'));
  fs.unlinkSync(tmp);
  j.decoder = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return tk.Tokenizer.fromString(JSON.stringify(j));
}

async function record(kind, t) {
  const out = { reference: 'npm tokenizers ' + version, ids: [], ids_plain: [], decoded: [] };
  for (const s of corpus) {
    const e = await t.encode(s, null, { addSpecialTokens: true });
    const p = await t.encode(s, null, { addSpecialTokens: false });
    out.ids.push(e.getIds());
    out.ids_plain.push(p.getIds());
    out.decoded.push(await t.decode(e.getIds(), true));
  }
  const b = (await t.encode(big, null, { addSpecialTokens: false })).getIds();
  out.big = { bytes: Buffer.byteLength(big, 'utf8'), n_ids: b.length, fnv1a64: fnv1a64(b) };
  const file = path.join(dataDir, kind, 'expected.json');
  fs.writeFileSync(file, JSON.stringify(out).replace(/\],\[/g, '],\n[') + '\n');
  console.log(kind + ': ' + out.ids.reduce((a, v) => a + v.length, 0) + ' corpus ids, 1 MiB text: ' + b.length + ' ids');
}

(async () => {
  for (const kind of fs.readdirSync(dataDir).sort()) {
    if (only.length && !only.includes(kind)) continue;
    const dir = path.join(dataDir, kind);
    if (fs.existsSync(path.join(dir, 'tokenizer.json.xz'))) {
      const json = require('child_process').execFileSync('xz', ['-dc', path.join(dir, 'tokenizer.json.xz')],
                                                           { maxBuffer: 1 << 28 });
      await record(kind, tk.Tokenizer.fromString(json.toString('utf8')));
    } else if (fs.existsSync(path.join(dir, 'tokenizer.json')))
      await record(kind, tk.Tokenizer.fromFile(path.join(dir, 'tokenizer.json')));
    else if (fs.existsSync(path.join(dir, 'merges.txt')))
      await record(kind, await gpt2FromFiles(dir));
  }
})();
