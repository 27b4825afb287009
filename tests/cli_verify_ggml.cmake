# `vkformer verify --ggml-activations`: the CPU's llama.cpp-arithmetic mode on a quantized
# llama-kq file must pass verify's tight tolerance (VKF_VERIFY_TOL_GGML, 1e-5). Run with -DCLI=<vkformer> -DFIX=<fixtures dir>.
execute_process(COMMAND ${CLI} verify ${FIX}/llama-kq --ggml-activations --case q4_k_m/fox
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "ggml activations" OR NOT out MATCHES "<= 1e-05")
  message(FATAL_ERROR "verify --ggml-activations failed (${rc}): ${out} ${err}")
endif()
