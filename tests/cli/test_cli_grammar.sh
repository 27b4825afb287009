#!/usr/bin/env bash
# Constrained output from the CLI (issue 32): generate and chat with --grammar, --grammar-file,
# -j/--json-schema, -jf/--json-schema-file. Usage mistakes exit 2 naming the flag and the place
# in the grammar or schema; a grammar the vocabulary cannot spell is a run-time error; outputs
# are strings of the grammar (checked here with the shell's own pattern matching, not the
# engine) and generation stops when the grammar is complete.
#   tests/cli/test_cli_grammar.sh BUILD_DIR SOURCE_DIR FIXTURES_DIR
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_fixtures llama-tiny
usage_error() { # WANT ARGS...: exit 2, one line on stderr naming WANT
    local want="$1"; shift
    run "$@"
    eq "$rc" 2 "'$*' exits 2"
    eq "$(wc -l <"$tmp/err")" 1 "'$*': one line on stderr"
    has "$want" "$err" "'$*'"
}

# ------------------------------------------------------------------ mistakes
usage_error "--grammar: grammar: line 1, column 2: expected '::='" generate -m "$kjv" --grammar x
usage_error "rule 'b' is used but never defined" generate -m "$kjv" --grammar 'root ::= "a" b'
usage_error "rule 'root' is left-recursive" generate -m "$kjv" --grammar 'root ::= root "a" | "b"'
usage_error "--json-schema: json schema: 'uniqueItems' at #/properties/t" generate -m "$kjv" \
    -j '{"properties": {"t": {"type": "array", "uniqueItems": true}}}'
usage_error "--json-schema: json schema: not valid JSON" generate -m "$kjv" -j '{"type":'
usage_error "give one" generate -m "$kjv" --grammar 'root ::= "a"' -j '{}'
usage_error "--grammar: grammar: line 1" chat -m "$kjv" --grammar 'root ::= ['
run generate -m "$kjv" --grammar-file "$tmp/missing.gbnf"
eq "$rc" 1 "a missing grammar file is a run-time error"; has "$tmp/missing.gbnf" "$err" "names the file"
# kjv-gpt's characters have no '{': a JSON object cannot be written with them
run generate --cpu -m "$kjv" -p "In" -j '{"type": "object"}' -n 8
eq "$rc" 1 "a grammar the vocabulary cannot spell"; has "no token of" "$err" "says why"

# ------------------------------------------------------------------ outputs are strings of the grammar
printf 'root ::= " " answer "."\nanswer ::= "yea" | "nay" | "verily" [ a-z]{0,12}\n' >"$tmp/g.gbnf"
for seed in 1 2 3; do
    run generate --cpu -m "$kjv" -p "And God said" --grammar-file "$tmp/g.gbnf" -n 40 --temp 1 -s $seed -v
    eq "$rc" 0 "generate --grammar-file (seed $seed)"
    gen="${out#And God said}"
    checks=$((checks + 1))
    case "$gen" in " yea." | " nay." | " verily"*.) ;; *) fail "seed $seed: '$gen' is not a string of the grammar" ;; esac
    has "the grammar is complete" "$err" "stops when the grammar is complete"
done
# greedy: the argmax among allowed tokens (the fast path) = the masked path at temperature 0
run generate --cpu -m "$kjv" -p "In the beginning" --grammar 'root ::= " " [a-z]+ " " [a-z]+ "."' -n 30 --temp 0
eq "$rc" 0 "greedy under a grammar"
checks=$((checks + 1))
case "${out#In the beginning}" in " "[a-z]*" "[a-z]*.) ;; *) fail "greedy: '${out#In the beginning}'" ;; esac
# a JSON Schema on a byte-level vocabulary (the random llama-tiny): JSON of that shape
schema='{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}, "ok": {"type": "boolean"}}, "required": ["n", "ok"], "additionalProperties": false}'
printf '%s' "$schema" >"$tmp/s.json"
for seed in 1 2; do
    run generate --cpu -m "$llama" -p "Hi" --no-display-prompt -jf "$tmp/s.json" -n 120 --temp 1 -s $seed
    eq "$rc" 0 "generate -jf (seed $seed)"
    flat="$(printf '%s' "$out" | tr -d ' \n\t')"
    checks=$((checks + 1))
    case "$flat" in '{"n":'[1-9]',"ok":'true'}' | '{"n":'[1-9]',"ok":'false'}') ;; *) fail "seed $seed: '$out' is not the schema's JSON" ;; esac
done
# chat: every answer constrained (here: one capitalised word and a full stop)
printf 'hello\nagain\n' | "$V" chat --cpu -m "$kjv" -n 30 --temp 1 -s 4 --grammar 'root ::= [A-Z] [a-z]{1,8} "."' >"$tmp/out" 2>"$tmp/err"; rc=$?
eq "$rc" 0 "chat --grammar"
n_ok=0
while IFS= read -r line; do
    case "$line" in [A-Z][a-z]*.) n_ok=$((n_ok + 1)) ;; *) fail "chat answer '$line'" ;; esac
done <"$tmp/out"
eq "$n_ok" 2 "two constrained answers"

finish test_cli_grammar
