# xpu_add_test: one Catch2 test executable beside the code, registered with ctest case by case.
#
#   xpu_add_test(NAME <target> SOURCES <file>...
#                [LIBS <library>...]      linked PRIVATE, with xpu::catch_main (the Catch2 main)
#                [LABELS <label>]         the ctest tier: unit (the default), e2e or upstream
#                [TIMEOUT <seconds>]      per test case; ctest's default when left out
#                [KUBE_SIM]               the test starts the real kube-sim: XPU_KUBE_SIM_BINARY
#                [DEFINES <NAME=value>...] more compile definitions (binaries, fixture folders)
#                [DEPENDS <target>...])   targets built first (binaries and libraries it runs)
#
# Every test gets XPU_SOURCE_DIR, the repository root, for the fixtures under e2e/fixtures/.
# Each test case runs in a process of its own with XPU_TEST_SKIP_EXIT=1 and SKIP_RETURN_CODE 77:
# XPU_SKIP (base/testing/skip.h) then exits 77, which ctest counts as Skipped, not Passed.
# A keyword given twice collects the values of both (cmake_parse_arguments), so wrappers such as
# xpu_fake_vendor_test add their DEFINES and DEPENDS to the caller's.
include_guard(GLOBAL)

function(xpu_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "KUBE_SIM" "NAME;LABELS;TIMEOUT"
                        "SOURCES;LIBS;DEFINES;DEPENDS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "xpu_add_test(${arg_NAME}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_NAME OR NOT arg_SOURCES)
    message(FATAL_ERROR "xpu_add_test: NAME and SOURCES are required")
  endif()
  if(NOT arg_LABELS)
    set(arg_LABELS unit)
  endif()

  add_executable(${arg_NAME} ${arg_SOURCES})
  target_link_libraries(${arg_NAME} PRIVATE ${arg_LIBS} xpu::catch_main)
  target_compile_definitions(${arg_NAME} PRIVATE XPU_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                                 ${arg_DEFINES})
  if(arg_KUBE_SIM)
    target_compile_definitions(${arg_NAME} PRIVATE XPU_KUBE_SIM_BINARY="$<TARGET_FILE:kube-sim>")
    add_dependencies(${arg_NAME} kube-sim)
  endif()
  if(arg_DEPENDS)
    add_dependencies(${arg_NAME} ${arg_DEPENDS})
  endif()

  set(properties LABELS ${arg_LABELS})
  if(arg_TIMEOUT)
    list(APPEND properties TIMEOUT ${arg_TIMEOUT})
  endif()
  catch_discover_tests(${arg_NAME} PROPERTIES ${properties} SKIP_RETURN_CODE 77
                       ENVIRONMENT XPU_TEST_SKIP_EXIT=1)
endfunction()
