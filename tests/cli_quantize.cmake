# `vkformer quantize` end to end: the CLI must write llama.cpp's own Q4_K_M, IQ4_XS and MXFP4
# (--pure) files of fixtures/llama-kq byte for byte, print its summary, and fail cleanly on a bad type.
# Run with -DCLI=<vkformer> -DFIX=<fixtures dir> -DOUT=<scratch dir>.
if(NOT IS_DIRECTORY ${FIX}/llama-kq)
  message(FATAL_ERROR "reference data missing: ${FIX}/llama-kq (VKF_FIXTURES; ./setup.sh test makes the sets with tools/refs/make_all.py)")
endif()
file(MAKE_DIRECTORY ${OUT})
foreach(t q4_k_m iq4_xs)
  execute_process(COMMAND ${CLI} quantize ${FIX}/llama-kq/llama-kq-f32.gguf ${OUT}/${t}.gguf ${t}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "quantize ${t} failed (${rc}): ${err}")
  endif()
  if(NOT out MATCHES "21 tensors, 16 quantized")
    message(FATAL_ERROR "unexpected summary: ${out}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}/${t}.gguf ${FIX}/llama-kq/llama-kq-${t}.gguf
    RESULT_VARIABLE same)
  if(NOT same EQUAL 0)
    message(FATAL_ERROR "${t}: the file differs from llama.cpp's llama-kq-${t}.gguf")
  endif()
  file(REMOVE ${OUT}/${t}.gguf)
endforeach()
# MXFP4 with llama-quantize's --pure (every matrix MXFP4: the only way it writes MXFP4 into a
# dense model)
execute_process(COMMAND ${CLI} quantize ${FIX}/llama-kq/llama-kq-f32.gguf ${OUT}/mxfp4.gguf MXFP4_MOE --pure
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "MXFP4 +16 ")
  message(FATAL_ERROR "quantize MXFP4_MOE --pure failed (${rc}): ${out} ${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}/mxfp4.gguf ${FIX}/llama-kq/llama-kq-mxfp4.gguf
  RESULT_VARIABLE same)
if(NOT same EQUAL 0)
  message(FATAL_ERROR "MXFP4_MOE --pure: the file differs from llama.cpp's llama-kq-mxfp4.gguf")
endif()
file(REMOVE ${OUT}/mxfp4.gguf)
execute_process(COMMAND ${CLI} quantize ${FIX}/llama-kq/llama-kq-f32.gguf ${OUT}/bad.gguf Q9_X
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "unknown type 'Q9_X'")
  message(FATAL_ERROR "a bad type must fail with a message, got ${rc}: ${err}")
endif()
