# `vkformer verify --ggml-activations --ggml-target B`: the CPU's llama.cpp-arithmetic mode on a
# quantized llama-kq file must pass verify's tight tolerance (VKF_VERIFY_TOL_GGML, 1e-5), and a
# gemma2 case of arch too, each under the target of the llama.cpp build that made the set: the
# cases name its ISA path ("ggml_isa": "avx2", tools/refs: llama.cpp 0c1e570 on AVX2); sets that
# name none are the older AVX-512 ones (llama-kq: c392e50, arch: dc02e1f). Run with
# -DCLI=<vkformer> -DFIX=<fixtures dir>.
foreach(set llama-kq arch)
  file(READ ${FIX}/${set}/cases.json cases)
  if(cases MATCHES "\"ggml_isa\": *\"avx2\"")
    set(target_${set} avx2)
  elseif(set STREQUAL "llama-kq")
    set(target_${set} avx512-2025)
  else()
    set(target_${set} avx512-2026)
  endif()
endforeach()
execute_process(COMMAND ${CLI} verify ${FIX}/llama-kq --ggml-activations --ggml-target ${target_llama-kq}
  --case q4_k_m/fox RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "ggml activations, ${target_llama-kq}" OR NOT out MATCHES "<= 1e-05")
  message(FATAL_ERROR "verify --ggml-activations failed (${rc}): ${out} ${err}")
endif()
execute_process(COMMAND ${CLI} verify ${FIX}/arch --ggml-target ${target_arch} --case gemma2-f32/fox
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "max\\|d\\| 0.000e\\+00 \\(<= 1e-05\\)")
  message(FATAL_ERROR "verify --ggml-target ${target_arch} on gemma2 failed (${rc}): ${out} ${err}")
endif()
# a build it does not know is refused with the list
execute_process(COMMAND ${CLI} verify ${FIX}/arch --ggml-target avx3
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "expected avx2, avx512-2026 or avx512-2025, got 'avx3'")
  message(FATAL_ERROR "verify --ggml-target avx3: expected a usage error (${rc}): ${out} ${err}")
endif()
