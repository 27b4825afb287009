// Records the Hugging Face `tokenizers` library's ids for variants of one tokenizer.json that
// differ only in the pre-tokenizer: Split with a regular expression under every behaviour, with
// and without invert, Digits, Punctuation and Metaspace prepend schemes in a Sequence. The
// vocabulary is tests/data/tokenizers/bpe_bytelevel (byte-level BPE, so every variant can
// encode any text).
//
//   node tools/tokenizers/ref_split.js DATA_DIR      (TOKREF: path of the npm package)
//
// Writes DATA_DIR/split_variants.json: {"reference", "variants": [{"pre_tokenizer": {...},
// "ids": [[...] per corpus string, add_special_tokens = false]}]}
'use strict';
const fs = require('fs');
const path = require('path');
const tkPath = process.env.TOKREF || '/tmp/tokref/node_modules/tokenizers';
const tk = require(tkPath);
const version = JSON.parse(fs.readFileSync(path.join(tkPath, 'package.json'), 'utf8')).version;
const dataDir = process.argv[2];
const corpus = JSON.parse(fs.readFileSync(path.join(dataDir, 'corpus.json'), 'utf8'));
const base = JSON.parse(fs.readFileSync(path.join(dataDir, 'bpe_bytelevel', 'tokenizer.json'), 'utf8'));
const bl = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false };
const rx = "(?i:'s|'ll)|\\p{N}{1,2}|[\\p{P}\\p{S}]+|\\s+(?!\\S)";
const variants = [];
for (const behavior of ['Removed', 'Isolated', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous'])
  for (const invert of [false, true])
    variants.push({ type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: rx }, behavior, invert }, bl] });
variants.push({ type: 'Sequence', pretokenizers: [
  { type: 'Digits', individual_digits: true }, { type: 'Punctuation', behavior: 'Isolated' }, bl] });
variants.push({ type: 'Sequence', pretokenizers: [
  { type: 'Digits', individual_digits: false }, { type: 'Punctuation', behavior: 'MergedWithPrevious' }, bl] });
variants.push({ type: 'Sequence', pretokenizers: [
  { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithNext', invert: false },
  { type: 'Split', pattern: { Regex: '[\\u4E00-\\u9FFF]|\\d{3}' }, behavior: 'Isolated', invert: false }, bl] });
(async () => {
  const out = { reference: 'npm tokenizers ' + version, regex: rx, variants: [] };
  for (const pre of variants) {
    const j = JSON.parse(JSON.stringify(base));
    j.pre_tokenizer = pre;
    const t = tk.Tokenizer.fromString(JSON.stringify(j));
    const ids = [];
    for (const s of corpus) ids.push((await t.encode(s, null, { addSpecialTokens: false })).getIds());
    out.variants.push({ pre_tokenizer: pre, ids });
  }
  fs.writeFileSync(path.join(dataDir, 'split_variants.json'), JSON.stringify(out).replace(/\],\[/g, '],\n[') + '\n');
  console.log(out.variants.length + ' variants, ' + out.variants.reduce((a, v) => a + v.ids.reduce((b, x) => b + x.length, 0), 0) + ' ids');
})();
