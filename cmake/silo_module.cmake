# silo_module(name LAYER n [TEST_ONLY] SRCS ... DEPS ... EXTERNAL ... [TEST_DEPS ...])
# Creates the static library silo_<name> (alias silo::<name>) from SRCS, and, when the
# folder holds *_test.cc files, the gtest binary silo_<name>_tests labelled `unit`.
# LAYER is the module's layer in STYLE.md 2.2 (0 base ... 5 proxy/target/client); TEST_ONLY
# marks a library only tests may use. DEPS are the Silo modules this one may include,
# TEST_DEPS the extra ones its tests may include. tools/check_deps.py reads all of them
# from this call and enforces the layer rules (docs/architecture.md, "Layers").
function(silo_module name)
  cmake_parse_arguments(M "TEST_ONLY" "LAYER" "SRCS;DEPS;EXTERNAL;TEST_DEPS" ${ARGN})
  if(NOT DEFINED M_LAYER OR NOT M_LAYER MATCHES "^[0-5]$")
    message(FATAL_ERROR "silo_module(${name}): give its layer, LAYER 0..5 (STYLE.md 2.2)")
  endif()
  set(lib silo_${name})
  add_library(${lib} STATIC ${M_SRCS})
  add_library(silo::${name} ALIAS ${lib})
  target_include_directories(${lib} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  set(deps)
  foreach(d IN LISTS M_DEPS)
    list(APPEND deps silo::${d})
  endforeach()
  target_link_libraries(${lib} PUBLIC ${deps} ${M_EXTERNAL})
  set_target_properties(${lib} PROPERTIES SILO_LAYER ${M_LAYER} SILO_TEST_ONLY "${M_TEST_ONLY}")
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(tests)
    set(tbin silo_${name}_tests)
    add_executable(${tbin} ${tests})
    set(tdeps)
    foreach(d IN LISTS M_TEST_DEPS)
      list(APPEND tdeps silo::${d})
    endforeach()
    target_link_libraries(${tbin} PRIVATE ${lib} ${tdeps} GTest::gtest_main GTest::gmock)
    gtest_discover_tests(${tbin} PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
  endif()
endfunction()
