# posemb_set_warnings(target): our warning flags (and -Werror with POSEMB_WERROR), plus the
# sanitizers with POSEMB_SANITIZE. Applied to every target built from our sources.
function(posemb_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # Clang reports a `#pragma omp simd` loop it could not vectorize (as under the fuzzers'
    # sanitizer instrumentation) as a warning; that is an optimizer remark, not a code defect.
    target_compile_options(${target} PRIVATE -Wno-pass-failed)
  endif()
  if(POSEMB_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(POSEMB_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined
                                             -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
