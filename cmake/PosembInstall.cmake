# Install rules and the exported CMake package: after `cmake --install`, an outside project
# uses find_package(posemb CONFIG REQUIRED) and links posemb::posemb, or, without CMake,
# pkg-config --cflags --libs posemb.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS posemb EXPORT posembTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/posemb DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/include/posemb/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/posemb)
if(TARGET posemb_cli)
  install(TARGETS posemb_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(POSEMB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/posemb)
install(EXPORT posembTargets NAMESPACE posemb:: DESTINATION ${POSEMB_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/posembConfig.cmake.in
  ${PROJECT_BINARY_DIR}/posembConfig.cmake INSTALL_DESTINATION ${POSEMB_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/posembConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/posembConfig.cmake ${PROJECT_BINARY_DIR}/posembConfigVersion.cmake
        DESTINATION ${POSEMB_CMAKE_DIR})

# pkg-config: the static library needs its dependencies on the consumer's link line (Requires and
# Libs); a shared one only its own (Requires.private and Libs.private).
get_target_property(_posemb_type posemb TYPE)
if(_posemb_type STREQUAL "STATIC_LIBRARY")
  set(POSEMB_PC_REQUIRES "Requires")
  set(POSEMB_PC_LIBS " ${OpenMP_CXX_FLAGS}")
  set(POSEMB_PC_LIBS_PRIVATE "")
else()
  set(POSEMB_PC_REQUIRES "Requires.private")
  set(POSEMB_PC_LIBS "")
  set(POSEMB_PC_LIBS_PRIVATE "Libs.private: ${OpenMP_CXX_FLAGS}")
endif()
# The prefix is the one `cmake --install --prefix` chose, known only at install time.
set(POSEMB_PC_PREFIX "@POSEMB_INSTALL_PREFIX@")
configure_file(${PROJECT_SOURCE_DIR}/cmake/posemb.pc.in ${PROJECT_BINARY_DIR}/posemb.pc.in @ONLY)
install(CODE "
  set(POSEMB_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/posemb.pc.in\" \"${PROJECT_BINARY_DIR}/posemb.pc\" @ONLY)
")
install(FILES ${PROJECT_BINARY_DIR}/posemb.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
