// Trains the Hugging Face tokenizer.json test tokenizers with the npm `tokenizers` package (the
// library's own trainers, default settings: the node binding exposes no trainer options), then
// cuts each vocabulary down to a small size and rebuilds the tokenizer with the library's
// constructors, so every committed file is the library's own serialization.
//
//   node tools/tokenizers/train_hf.js TRAINING_TEXT OUT_DIR     (run by make_data.sh)
//
// Vocabularies are cut consistently: BPE keeps the first merges (every kept merge only uses
// tokens of earlier merges or the alphabet), WordPiece and WordLevel keep the first ids (the
// alphabet comes first, then merges / frequency order), Unigram keeps every single character and
// the highest-scoring pieces.
'use strict';
const fs = require('fs');
const path = require('path');
const tk = require(process.env.TOKREF || '/tmp/tokref/node_modules/tokenizers');

const [text, out] = process.argv.slice(2);
fs.mkdirSync(out, { recursive: true });

function trainJson(model, setup) {
  const t = new tk.Tokenizer(model);
  setup(t);
  t.train([text]);
  const tmp = path.join(out, '.tmp.json');
  t.save(tmp);
  const j = JSON.parse(fs.readFileSync(tmp, 'utf8'));
  fs.unlinkSync(tmp);
  return j;
}

// Saves t as OUT/kind/tokenizer.json; patch(json) may set parts the node binding has no
// constructor for (the ByteLevel decoder); the patched file is loaded back and saved again by
// the library so that it stays in its canonical form.
function save(t, kind, extra, patch) {
  const dir = path.join(out, kind);
  const file = path.join(dir, 'tokenizer.json');
  fs.mkdirSync(dir, { recursive: true });
  t.save(file, true);
  if (patch) {
    const j = JSON.parse(fs.readFileSync(file, 'utf8'));
    patch(j);
    t = tk.Tokenizer.fromString(JSON.stringify(j));
    t.save(file, true);
  }
  for (const [name, obj] of Object.entries(extra || {}))
    fs.writeFileSync(path.join(dir, name), JSON.stringify(obj, null, 2) + '\n');
  console.log(kind + ': vocab ' + t.getVocabSize(true));
}

const mergePair = (m) => (Array.isArray(m) ? m : m.split(' '));

// Keeps the first merges until the vocabulary (base tokens + merge results) has n entries.
function cutBpe(base, merges, n) {
  const vocab = {};
  for (const s of base) if (!(s in vocab)) vocab[s] = Object.keys(vocab).length;
  const kept = [];
  for (const m of merges) {
    if (Object.keys(vocab).length >= n) break;
    const [a, b] = mergePair(m);
    if (!(a in vocab) || !(b in vocab)) continue;
    kept.push([a, b]);
    if (!((a + b) in vocab)) vocab[a + b] = Object.keys(vocab).length;
  }
  return { vocab, merges: kept };
}

const bytes = [];
for (let b = 0; b < 256; b++) bytes.push('<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>');

// ------------------------------------------------------------------ byte-level BPE (RoBERTa)
{
  const j = trainJson(tk.BPE.empty(), (t) => t.setPreTokenizer(tk.byteLevelPreTokenizer(true, true)));
  const specials = ['<s>', '<pad>', '</s>', '<unk>'];
  const alphabet = tk.byteLevelAlphabet().sort();
  const { vocab, merges } = cutBpe(specials.concat(alphabet), j.model.merges, 2000);
  vocab['<mask>'] = Object.keys(vocab).length;
  const t = new tk.Tokenizer(tk.BPE.init(vocab, merges, {}));
  t.setPreTokenizer(tk.byteLevelPreTokenizer(true, true));
  t.setPostProcessor(tk.robertaProcessing(['</s>', vocab['</s>']], ['<s>', vocab['<s>']], true, true));
  t.addAddedTokens([new tk.AddedToken('<s>', true), new tk.AddedToken('<pad>', true),
    new tk.AddedToken('</s>', true), new tk.AddedToken('<unk>', true),
    new tk.AddedToken('<mask>', true, { leftStrip: true })]);
  save(t, 'bpe_bytelevel', {
    'tokenizer_config.json': { bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>', pad_token: '<pad>',
      mask_token: { content: '<mask>', lstrip: true, normalized: false, rstrip: false, single_word: false } },
  }, (j) => { j.decoder = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true }; });

  // GPT-2 files from the same vocabulary: vocab.json + merges.txt, <|endoftext|> last
  const dir = path.join(out, 'gpt2_files');
  fs.mkdirSync(dir, { recursive: true });
  const v2 = {};
  for (const [s, id] of Object.entries(vocab)) if (!specials.includes(s) && s !== '<mask>') v2[s] = Object.keys(v2).length;
  v2['<|endoftext|>'] = Object.keys(v2).length;
  fs.writeFileSync(path.join(dir, 'vocab.json'), JSON.stringify(v2));
  fs.writeFileSync(path.join(dir, 'merges.txt'), '#version: 0.2\n' + merges.map((m) => m.join(' ')).join('\n') + '\n');
  console.log('gpt2_files: vocab ' + Object.keys(v2).length + ', merges ' + merges.length);
}

// ------------------------------------------------------------------ llama-style BPE (byte fallback)
{
  const j = trainJson(tk.BPE.empty(), (t) => t.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'always', true)));
  const base = ['<unk>', '<s>', '</s>'].concat(bytes);
  const chars = Object.keys(j.model.vocab).filter((s) => [...s].length === 1).sort();
  const { vocab, merges } = cutBpe(base.concat(chars), j.model.merges, 1259);
  const mk = () => tk.BPE.init(vocab, merges, { unkToken: '<unk>', fuseUnk: true, byteFallback: true });
  const specialsAdded = () => [new tk.AddedToken('<unk>', true), new tk.AddedToken('<s>', true), new tk.AddedToken('</s>', true)];
  const cfg = { 'tokenizer_config.json': { add_bos_token: true, add_eos_token: false, bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>' } };

  // llama 2: Prepend + Replace normalizer, no pre-tokenizer
  let t = new tk.Tokenizer(mk());
  t.setNormalizer(tk.sequenceNormalizer([tk.prependNormalizer('▁'), tk.replace(' ', '▁')]));
  t.setDecoder(tk.sequenceDecoder([tk.replaceDecoder('▁', ' '), tk.byteFallbackDecoder(), tk.fuseDecoder(), tk.stripDecoder(' ', 1, 0)]));
  t.setPostProcessor(tk.templateProcessing('<s> $A', '<s> $A <s> $B', [['<s>', vocab['<s>']]]));
  t.addAddedTokens(specialsAdded());
  save(t, 'bpe_llama', cfg);

  // newer llama-style files: Metaspace pre-tokenizer (prepend "first", no split), no normalizer
  t = new tk.Tokenizer(mk());
  t.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'first', false));
  t.setDecoder(tk.sequenceDecoder([tk.byteFallbackDecoder(), tk.metaspaceDecoder('▁', 'first', false)]));
  t.setPostProcessor(tk.templateProcessing('<s> $A </s>', null, [['<s>', vocab['<s>']], ['</s>', vocab['</s>']]]));
  t.addAddedTokens(specialsAdded());
  save(t, 'bpe_metaspace', { 'special_tokens_map.json': { bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>' } });
}

// ------------------------------------------------------------------ WordPiece (BERT)
{
  const j = trainJson(tk.WordPiece.empty(), (t) => {
    t.setNormalizer(tk.bertNormalizer());
    t.setPreTokenizer(tk.bertPreTokenizer());
  });
  const vocab = {};
  for (const s of ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']) vocab[s] = Object.keys(vocab).length;
  const trained = Object.entries(j.model.vocab).sort((a, b) => a[1] - b[1]);
  for (const [s] of trained) {
    if (Object.keys(vocab).length >= 2000) break;
    if (!(s in vocab)) vocab[s] = Object.keys(vocab).length;
  }
  const specials = () => ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map((s) => new tk.AddedToken(s, true));

  let t = new tk.Tokenizer(tk.WordPiece.init(vocab, { unkToken: '[UNK]', continuingSubwordPrefix: '##', maxInputCharsPerWord: 100 }));
  t.setNormalizer(tk.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase: true }));
  t.setPreTokenizer(tk.bertPreTokenizer());
  t.setPostProcessor(tk.templateProcessing('[CLS] $A [SEP]', '[CLS] $A [SEP] $B:1 [SEP]:1', [['[CLS]', vocab['[CLS]']], ['[SEP]', vocab['[SEP]']]]));
  t.setDecoder(tk.wordPieceDecoder('##', true));
  t.addAddedTokens(specials());
  save(t, 'wordpiece', {
    'special_tokens_map.json': { cls_token: '[CLS]', sep_token: '[SEP]', unk_token: '[UNK]', pad_token: '[PAD]', mask_token: '[MASK]' },
    'tokenizer_config.json': { do_lower_case: true, model_max_length: 512 },
  });

  // cased variant: no lowercasing (and so no accent stripping), BertProcessing, short words only
  t = new tk.Tokenizer(tk.WordPiece.init(vocab, { unkToken: '[UNK]', continuingSubwordPrefix: '##', maxInputCharsPerWord: 12 }));
  t.setNormalizer(tk.bertNormalizer({ cleanText: true, handleChineseChars: false, lowercase: false }));
  t.setPreTokenizer(tk.bertPreTokenizer());
  t.setPostProcessor(tk.bertProcessing(['[SEP]', vocab['[SEP]']], ['[CLS]', vocab['[CLS]']]));
  t.setDecoder(tk.wordPieceDecoder('##', false));
  t.addAddedTokens(specials());
  save(t, 'wordpiece_cased');
}

// ------------------------------------------------------------------ Unigram (Metaspace, byte fallback)
{
  const j = trainJson(tk.Unigram.empty(), (t) => {
    t.setNormalizer(tk.nfkcNormalizer());
    t.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'always', true));
  });
  const pieces = j.model.vocab; // [[piece, score], ...]
  const single = pieces.filter(([s]) => [...s].length === 1);
  const multi = pieces.filter(([s]) => [...s].length > 1).sort((a, b) => b[1] - a[1]);
  const vocab = [['<pad>', 0], ['</s>', 0], ['<unk>', 0]].concat(bytes.map((b) => [b, 0]));
  const seen = new Set(vocab.map(([s]) => s));
  for (const p of single.concat(multi)) {
    if (vocab.length >= 1259) break;
    if (!seen.has(p[0])) { vocab.push(p); seen.add(p[0]); }
  }
  const t = new tk.Tokenizer(tk.Unigram.init(vocab, { unkId: 2, byteFallback: true }));
  t.setNormalizer(tk.nfkcNormalizer());
  t.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'always', true));
  t.setDecoder(tk.sequenceDecoder([tk.byteFallbackDecoder(), tk.metaspaceDecoder('▁', 'always', true)]));
  t.setPostProcessor(tk.templateProcessing('$A </s>', '$A </s> $B </s>', [['</s>', 1]]));
  t.addAddedTokens([new tk.AddedToken('<pad>', true), new tk.AddedToken('</s>', true), new tk.AddedToken('<unk>', true)]);
  save(t, 'unigram', { 'tokenizer_config.json': { eos_token: '</s>', unk_token: '<unk>', pad_token: '<pad>' } });
}

// ------------------------------------------------------------------ Unigram converted from SentencePiece
// What transformers' converters make of a SentencePiece Unigram model (T5 style): the pieces and
// scores of spm_unigram/tokenizer.model, its precompiled charsmap as a Precompiled normalizer
// followed by Replace(Regex " {2,}", " "), Metaspace. Needs spm_unigram (train_spm.py first).
{
  const model = fs.readFileSync(path.join(out, 'spm_unigram', 'tokenizer.model'));
  // a minimal protobuf walk: ModelProto.pieces (1) {piece (1), score (2), type (3)},
  // ModelProto.normalizer_spec (3) {precompiled_charsmap (2)}
  const varint = (b, p) => { let v = 0, m = 1; for (;;) { const x = b[p.i++]; v += (x & 0x7f) * m; if (!(x & 0x80)) return v; m *= 128; } };
  const fields = (b) => {
    const p = { i: 0 }, outF = [];
    while (p.i < b.length) {
      const key = varint(b, p), f = Math.floor(key / 8), w = key & 7;
      if (w === 0) outF.push([f, varint(b, p)]);
      else if (w === 2) { const l = varint(b, p); outF.push([f, b.subarray(p.i, p.i + l)]); p.i += l; }
      else if (w === 5) { outF.push([f, b.readFloatLE(p.i)]); p.i += 4; }
      else if (w === 1) { p.i += 8; }
      else throw new Error('protobuf wire type ' + w);
    }
    return outF;
  };
  const vocab = [];
  let charsmap = null, unkId = 0;
  for (const [f, v] of fields(model)) {
    if (f === 1) {
      let piece = '', score = 0, type = 1;
      for (const [g, x] of fields(v)) { if (g === 1) piece = x.toString('utf8'); else if (g === 2) score = x; else if (g === 3) type = x; }
      if (type === 2) unkId = vocab.length;
      vocab.push([piece, type === 1 ? score : 0]);
    } else if (f === 3) {
      for (const [g, x] of fields(v)) if (g === 2) charsmap = Array.from(x);
    }
  }
  const t = new tk.Tokenizer(tk.Unigram.init(vocab, { unkId, byteFallback: false }));
  t.setNormalizer(tk.precompiled(charsmap));
  t.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'always', true));
  t.setDecoder(tk.metaspaceDecoder('▁', 'always', true));
  t.setPostProcessor(tk.templateProcessing('$A </s>', null, [['</s>', 2]]));
  t.addAddedTokens([new tk.AddedToken('<unk>', true), new tk.AddedToken('<s>', true), new tk.AddedToken('</s>', true),
    new tk.AddedToken('<mask>', false)]);
  // T5's normalizer also squeezes runs of spaces with a regular expression (no node constructor)
  save(t, 'unigram_spm', {}, (j) => {
    j.normalizer = { type: 'Sequence', normalizers: [j.normalizer, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }] };
  });
}

// ------------------------------------------------------------------ WordLevel
{
  const setup = (t) => {
    t.setNormalizer(tk.sequenceNormalizer([tk.nfdNormalizer(), tk.stripAccentsNormalizer(), tk.lowercase()]));
    t.setPreTokenizer(tk.whitespacePreTokenizer());
  };
  const j = trainJson(tk.WordLevel.empty(), setup);
  const vocab = { '[UNK]': 0, '[PAD]': 1 };
  for (const [s] of Object.entries(j.model.vocab).sort((a, b) => a[1] - b[1])) {
    if (Object.keys(vocab).length >= 2000) break;
    if (!(s in vocab)) vocab[s] = Object.keys(vocab).length;
  }
  const t = new tk.Tokenizer(tk.WordLevel.init(vocab, { unkToken: '[UNK]' }));
  setup(t);
  t.addAddedTokens([new tk.AddedToken('[UNK]', true), new tk.AddedToken('[PAD]', true)]);
  save(t, 'wordlevel');
}
