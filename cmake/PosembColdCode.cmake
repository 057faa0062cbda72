# Cold code compiled for compile time, not run time.
#
#   posemb_cold_unity_group(posemb_cli files cmd_a.cpp cmd_b.cpp)
#
# puts the files into one unity file of `target` (UNITY_BUILD_MODE GROUP must be set on it) and,
# in optimized builds, compiles that unity file at -O1 instead of the build type's -O3. For code
# that parses options and JSON, formats reports and names files: the header-only CLI11, fmt and
# nlohmann/json instantiated there cost most of a first build at -O3 (README, "The first run"),
# and nothing in them is on a hot path. Numeric code (kernels, conversions, the model) must not
# be given to this function. Debug builds keep their own flags. The optimization level does not
# change any result: GCC evaluates floating point the same at -O1 and -O3 (no -ffast-math).
#
# Call it in the directory that creates `target`: it names the unity file CMake generates
# there (CMakeFiles/<target>.dir/Unity/unity_<group>_cxx.cxx), whose properties CMake reads.
function(posemb_cold_unity_group target group)
  set_source_files_properties(${ARGN} PROPERTIES UNITY_GROUP ${group})
  set(unity "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${target}.dir/Unity/unity_${group}_cxx.cxx")
  set_source_files_properties("${unity}" PROPERTIES COMPILE_OPTIONS
                              "$<$<NOT:$<CONFIG:Debug>>:-O1>")
endfunction()
