# Install rules and the exported CMake package: after `cmake --install`, an outside project
# uses find_package(posemb CONFIG REQUIRED) and links posemb::posemb.
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
