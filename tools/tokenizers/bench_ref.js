// Single-thread encode speed of the Hugging Face `tokenizers` npm package on the 1 MiB text,
// for every tokenizer.json kind (and gpt2_files) under tests/data/tokenizers: the reference
// numbers of bench/RESULTS.md. Run with RAYON_NUM_THREADS=1 (the library parallelizes only
// batches; one encode call runs on one thread anyway).
//
//   RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false node tools/tokenizers/bench_ref.js DATA_DIR BIG_TXT [--json]
'use strict';
const fs = require('fs');
const path = require('path');
const tk = require(process.env.TOKREF || '/tmp/tokref/node_modules/tokenizers');
const [dataDir, bigPath, flag] = process.argv.slice(2);
const big = fs.readFileSync(bigPath, 'utf8');
const bytes = Buffer.byteLength(big, 'utf8');

(async () => {
  const rows = [];
  for (const kind of fs.readdirSync(dataDir).sort()) {
    const dir = path.join(dataDir, kind);
    let t;
    if (fs.existsSync(path.join(dir, 'tokenizer.json.xz')))
      t = tk.Tokenizer.fromString(require('child_process').execFileSync(
          'xz', ['-dc', path.join(dir, 'tokenizer.json.xz')], { maxBuffer: 1 << 28 }).toString('utf8'));
    else if (fs.existsSync(path.join(dir, 'tokenizer.json'))) t = tk.Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
    else if (fs.existsSync(path.join(dir, 'merges.txt'))) {
      t = new tk.Tokenizer(await tk.BPE.fromFile(path.join(dir, 'vocab.json'), path.join(dir, 'merges.txt'), {}));
      t.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));
      t.addSpecialTokens(['<|endoftext|>']);
    } else continue;
    await t.encode(big, null, { addSpecialTokens: false }); // warm-up (fills the cache like ours)
    let best = Infinity;
    for (let r = 0; r < 3; r++) {
      const t0 = process.hrtime.bigint();
      await t.encode(big, null, { addSpecialTokens: false });
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      if (s < best) best = s;
    }
    rows.push({ kind, mb_per_s: bytes / 1e6 / best });
  }
  if (flag === '--json') console.log(JSON.stringify(rows));
  else for (const r of rows) console.log(r.kind.padEnd(16) + r.mb_per_s.toFixed(2).padStart(8) + ' MB/s');
})();
