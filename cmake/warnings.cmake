add_compile_options(-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough)
# GCC 12 reports Asio's coroutine frame allocator (its own operator new/delete pair) as
# mismatched: a known false positive (GCC bug 109224).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options(-Wno-mismatched-new-delete)
endif()
# Boost 1.74 Asio needs <utility> before its headers under GCC 12 + C++20 (ENV.md pitfall 1).
add_compile_options(-include utility)
# Boost's headers warn under -Wshadow/-Wpedantic; mark them as system headers.
include_directories(SYSTEM ${Boost_INCLUDE_DIRS})
add_compile_definitions(BOOST_ASIO_NO_DEPRECATED BOOST_BEAST_USE_STD_STRING_VIEW)
if(SILO_WERROR)
  add_compile_options(-Werror)
endif()
if(SILO_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
