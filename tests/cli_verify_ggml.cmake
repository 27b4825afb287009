# `vkformer verify --ggml-activations --ggml-target B`: the CPU's llama.cpp-arithmetic mode on a
# quantized llama-kq file (made by llama.cpp c392e50 on AVX-512) must pass verify's tight tolerance
# (VKF_VERIFY_TOL_GGML, 1e-5), and a gemma2 case of arch (dc02e1f) too. Run with -DCLI=<vkformer>
# -DFIX=<fixtures dir>.
execute_process(COMMAND ${CLI} verify ${FIX}/llama-kq --ggml-activations --ggml-target avx512-2025
  --case q4_k_m/fox RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "ggml activations, avx512-2025" OR NOT out MATCHES "<= 1e-05")
  message(FATAL_ERROR "verify --ggml-activations failed (${rc}): ${out} ${err}")
endif()
execute_process(COMMAND ${CLI} verify ${FIX}/arch --ggml-target avx512-2026 --case gemma2-f32/fox
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "max\\|d\\| 0.000e\\+00 \\(<= 1e-05\\)")
  message(FATAL_ERROR "verify --ggml-target avx512-2026 on gemma2 failed (${rc}): ${out} ${err}")
endif()
# a build it does not know is refused with the list
execute_process(COMMAND ${CLI} verify ${FIX}/arch --ggml-target avx3
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "expected avx2, avx512-2026 or avx512-2025, got 'avx3'")
  message(FATAL_ERROR "verify --ggml-target avx3: expected a usage error (${rc}): ${out} ${err}")
endif()
