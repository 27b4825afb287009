# `vkformer verify --ggml-activations --ggml-target B`: the CPU's llama.cpp-arithmetic mode on a
# quantized llama-kq file must pass verify's tight tolerance (VKF_VERIFY_TOL_GGML, 1e-5), and a
# gemma2 case of arch exactly (max|d| 0), each under the target of the llama.cpp build that made
# the case: its "ggml_isa" and "llama_cpp" in cases.json (the sets of tools/refs/make_all.py:
# "avx2", "0c1e570 (llama-cpp-python 0.3.36)"); a case that names none was made where its set's
# README says (llama-kq: c392e50 on AVX-512, arch: dc02e1f on AVX-512). The table is
# tests/test_ggml_mode.c's k_builds. Run with -DCLI=<vkformer> -DFIX=<fixtures dir>.
foreach(set llama-kq arch)
  if(NOT IS_DIRECTORY ${FIX}/${set})
    message(FATAL_ERROR "reference data missing: ${FIX}/${set} (VKF_FIXTURES; ./setup.sh test makes the sets with tools/refs/make_all.py)")
  endif()
endforeach()

# ggml_target(SET CASE README_TARGET OUT): the --ggml-target of case CASE of SET
function(ggml_target set case readme out)
  file(READ ${FIX}/${set}/cases.json js)
  string(JSON n LENGTH "${js}")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${js}" ${i} name)
    if(NOT name STREQUAL case)
      continue()
    endif()
    string(JSON isa ERROR_VARIABLE no_isa GET "${js}" ${i} ggml_isa)
    string(JSON build ERROR_VARIABLE no_build GET "${js}" ${i} llama_cpp)
    if(no_isa AND no_build)
      set(${out} ${readme} PARENT_SCOPE)
    elseif(isa STREQUAL "avx2" AND build MATCHES "^0c1e570")
      set(${out} avx2 PARENT_SCOPE)
    elseif(isa STREQUAL "avx512" AND build MATCHES "^dc02e1f")
      set(${out} avx512-2026 PARENT_SCOPE)
    elseif(isa STREQUAL "avx512" AND build MATCHES "^c392e50")
      set(${out} avx512-2025 PARENT_SCOPE)
    else()
      message(FATAL_ERROR "${set}/cases.json ${case}: no --ggml-target reproduces llama.cpp '${build}' on '${isa}'")
    endif()
    return()
  endforeach()
  message(FATAL_ERROR "${FIX}/${set}/cases.json has no case ${case}")
endfunction()

ggml_target(llama-kq llama-kq-q4_k_m/fox avx512-2025 kq_target)
execute_process(COMMAND ${CLI} verify ${FIX}/llama-kq --ggml-activations --ggml-target ${kq_target}
  --case q4_k_m/fox RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "ggml activations, ${kq_target}" OR NOT out MATCHES "<= 1e-05")
  message(FATAL_ERROR "verify --ggml-activations --ggml-target ${kq_target} failed (${rc}): ${out} ${err}")
endif()
ggml_target(arch gemma2-f32/fox avx512-2026 arch_target)
execute_process(COMMAND ${CLI} verify ${FIX}/arch --ggml-target ${arch_target} --case gemma2-f32/fox
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "max\\|d\\| 0.000e\\+00 \\(<= 1e-05\\)")
  message(FATAL_ERROR "verify --ggml-target ${arch_target} on gemma2 failed (${rc}): ${out} ${err}")
endif()
# a build it does not know is refused with the list
execute_process(COMMAND ${CLI} verify ${FIX}/arch --ggml-target avx3
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "expected avx2, avx512-2026 or avx512-2025, got 'avx3'")
  message(FATAL_ERROR "verify --ggml-target avx3: expected a usage error (${rc}): ${out} ${err}")
endif()
# BF16 weights (llama-kq-bf16, tools/refs) under the target of the build that made them: exact
ggml_target(llama-kq llama-kq-bf16/fox avx512-2025 bf16_target)
execute_process(COMMAND ${CLI} verify ${FIX}/llama-kq --ggml-target ${bf16_target} --case bf16/fox
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "max\\|d\\| 0.000e\\+00 \\(<= 1e-05\\)")
  message(FATAL_ERROR "verify --ggml-target ${bf16_target} on BF16 weights failed (${rc}): ${out} ${err}")
endif()
# A case that claims a build's arithmetic on a weight type the target was never checked on is
# refused by name, not run: the llama-kq Q4_K_M case relabelled as made by dc02e1f on AVX-512
# (avx512-2026 is checked on F32 only), in a directory of its own next to the test's outputs
file(READ ${FIX}/llama-kq/cases.json js)
string(JSON n LENGTH "${js}")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${js}" ${i} name)
  if(name STREQUAL "llama-kq-q4_k_m/fox")
    string(JSON one GET "${js}" ${i})
  endif()
endforeach()
string(JSON one SET "${one}" ggml_isa "\"avx512\"")
string(JSON one SET "${one}" llama_cpp "\"dc02e1f\"")
set(dir ${CMAKE_CURRENT_BINARY_DIR}/cli_verify_ggml_refusal)
file(MAKE_DIRECTORY ${dir})
file(WRITE ${dir}/cases.json "[${one}]")
foreach(key model prompt_logits greedy_logits)
  string(JSON f GET "${one}" ${key})
  file(CREATE_LINK ${FIX}/llama-kq/${f} ${dir}/${f} SYMBOLIC)
endforeach()
execute_process(COMMAND ${CLI} verify ${dir} --ggml-target avx512-2026
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "target avx512-2026 .*dc02e1f.* does not reproduce Q[0-9]_K weights.*checked on F32")
  message(FATAL_ERROR "verify --ggml-target avx512-2026 on Q4_K_M: expected a refusal naming the target and type (${rc}): ${out} ${err}")
endif()
