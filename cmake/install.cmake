# What `cmake --install build [--prefix DIR]` puts in place:
#   bin/idforge
#   include/idforge/*.h                      the public headers (include/idforge/)
#   lib/libidforge_core.a                    Snowflake, segments' double buffer, UUID, ULID
#   lib/libidforge_client.a                  the client of a list of servers (idforge/client.h)
#   lib/cmake/idforge/idforgeConfig.cmake    find_package(idforge) -> targets idforge::core and
#                                            idforge::client
#   lib/pkgconfig/idforge.pc                 pkg-config --cflags --libs idforge
# examples/ builds against an installed tree both ways (tests/install/check.sh).
include(CMakePackageConfigHelpers)

set_target_properties(idforge_core PROPERTIES EXPORT_NAME core)
set_target_properties(idforge_client PROPERTIES EXPORT_NAME client)
install(TARGETS idforge_core idforge_client EXPORT idforgeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/idforge
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS idforge RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(IDFORGE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/idforge)
install(EXPORT idforgeTargets NAMESPACE idforge:: DESTINATION ${IDFORGE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/idforgeConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/idforgeConfig.cmake
                              INSTALL_DESTINATION ${IDFORGE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/idforgeConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/idforgeConfig.cmake
              ${PROJECT_BINARY_DIR}/idforgeConfigVersion.cmake
        DESTINATION ${IDFORGE_CMAKE_DIR})

# pkg-config: paths relative to the .pc file's prefix, so a tree installed with
# --prefix anywhere (or DESTDIR) is found through PKG_CONFIG_PATH.
# lib/pkgconfig -> ../.. ; lib/x86_64-linux-gnu/pkgconfig -> ../../..
file(RELATIVE_PATH IDFORGE_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/idforge.pc.in ${PROJECT_BINARY_DIR}/idforge.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/idforge.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
