# posemb_set_warnings(target): our warning flags (and -Werror with POSEMB_WERROR), plus the
# sanitizers with POSEMB_SANITIZE. Applied to every target built from our sources.
function(posemb_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(POSEMB_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(POSEMB_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined
                                             -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
