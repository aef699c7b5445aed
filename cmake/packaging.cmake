# The Debian package (`make deb`, or `cmake --build build --target deb`):
# build/idforge_<version>_<arch>.deb, made by CPack's DEB generator from the install
# component `deb` only (the library, headers and CMake/pkg-config files of install.cmake
# are for `cmake --install`). It holds:
#   /usr/bin/idforge
#   /usr/share/man/man1/idforge.1.gz, idforge-serve.1.gz   help2man, from the --help texts
#   /etc/idforge/idforge.toml             conffile: every setting commented out at its
#                                         default, but data_dir = "/var/lib/idforge"
#   /lib/systemd/system/idforge.service   Type=notify, watchdog, sandboxed
#   /usr/lib/sysusers.d/idforge.conf      the system user idforge (postinst)
#   /usr/share/doc/idforge/copyright, changelog.gz
# The sources are in packaging/; tests/package/check.sh runs lintian on the package,
# systemd-analyze on the unit, and installs it into an empty root.
set(IDFORGE_PKG_SRC ${PROJECT_SOURCE_DIR}/packaging)
set(IDFORGE_PKG_OUT ${PROJECT_BINARY_DIR}/packaging)

# Generated from the binary, so only when the package is built (target idforge_deb_files),
# never by a plain build.
add_custom_command(
  OUTPUT ${IDFORGE_PKG_OUT}/idforge.toml
  COMMAND ${CMAKE_COMMAND} -E make_directory ${IDFORGE_PKG_OUT}
  COMMAND ${IDFORGE_PKG_SRC}/make-config.sh $<TARGET_FILE:idforge> ${IDFORGE_PKG_OUT}/idforge.toml
  DEPENDS idforge ${IDFORGE_PKG_SRC}/make-config.sh
  COMMENT "Writing the package's idforge.toml from idforge serve --describe-settings toml"
  VERBATIM)
add_custom_command(
  OUTPUT ${IDFORGE_PKG_OUT}/idforge.1.gz ${IDFORGE_PKG_OUT}/idforge-serve.1.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${IDFORGE_PKG_OUT}
  COMMAND ${IDFORGE_PKG_SRC}/make-man.sh $<TARGET_FILE:idforge> ${IDFORGE_PKG_OUT}/idforge.1.gz
          idforge "distributed unique-ID server" "Examples:" EXAMPLES
          ${IDFORGE_PKG_SRC}/idforge.h2m
  COMMAND ${IDFORGE_PKG_SRC}/make-man.sh $<TARGET_FILE:idforge> ${IDFORGE_PKG_OUT}/idforge-serve.1.gz
          idforge-serve "run the idforge ID server (HTTP and the Redis protocol)"
          "Every setting is" NOTES ${IDFORGE_PKG_SRC}/idforge-serve.h2m serve
  DEPENDS idforge ${IDFORGE_PKG_SRC}/make-man.sh ${IDFORGE_PKG_SRC}/idforge.h2m
          ${IDFORGE_PKG_SRC}/idforge-serve.h2m
  COMMENT "Writing the man pages with help2man"
  VERBATIM)
add_custom_command(
  OUTPUT ${IDFORGE_PKG_OUT}/changelog.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${IDFORGE_PKG_OUT}
  COMMAND sh -c "gzip -9n -c \"$1\" > \"$2\"" sh ${IDFORGE_PKG_SRC}/changelog
          ${IDFORGE_PKG_OUT}/changelog.gz
  DEPENDS ${IDFORGE_PKG_SRC}/changelog
  VERBATIM)
add_custom_target(idforge_deb_files
  DEPENDS ${IDFORGE_PKG_OUT}/idforge.toml ${IDFORGE_PKG_OUT}/idforge.1.gz
          ${IDFORGE_PKG_OUT}/idforge-serve.1.gz ${IDFORGE_PKG_OUT}/changelog.gz)

# Installed only by the package (component deb); the paths are those of the package's
# root, with the /usr prefix below.
install(TARGETS idforge RUNTIME DESTINATION bin COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${IDFORGE_PKG_OUT}/idforge.1.gz ${IDFORGE_PKG_OUT}/idforge-serve.1.gz
        DESTINATION share/man/man1 COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${IDFORGE_PKG_SRC}/idforge.sysusers DESTINATION lib/sysusers.d
        RENAME idforge.conf COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${IDFORGE_PKG_SRC}/copyright ${IDFORGE_PKG_OUT}/changelog.gz
        DESTINATION share/doc/idforge COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${IDFORGE_PKG_OUT}/idforge.toml DESTINATION /etc/idforge
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${IDFORGE_PKG_SRC}/idforge.service DESTINATION /lib/systemd/system
        COMPONENT deb EXCLUDE_FROM_ALL)

# The maintainer scripts and conffiles list go into the control archive.
file(MAKE_DIRECTORY ${IDFORGE_PKG_OUT})
file(WRITE ${IDFORGE_PKG_OUT}/conffiles "/etc/idforge/idforge.toml\n")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME idforge)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "idforge")
set(CPACK_PACKAGE_CONTACT "idforge maintainers <maintainers@users.noreply.a-seed-7f4d8f66.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed unique-ID server")
set(CPACK_PACKAGE_DESCRIPTION
    "idforge hands out unique IDs over HTTP and the Redis protocol: Snowflake\n\
IDs in any layout (worker ids leased from a local directory, etcd, ZooKeeper\n\
or Redis), segment IDs from SQLite, PostgreSQL, MySQL or Redis, UUIDv7,\n\
UUIDv4 and ULID. This package runs it as the systemd service idforge.service.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR})
set(CPACK_STRIP_FILES ON)
# Only the `deb` component, and without building `all` first: the `deb` target below
# builds what the package needs.
set(CPACK_INSTALL_CMAKE_PROJECTS "${PROJECT_BINARY_DIR};idforge;deb;/")
# idforge_<version>_<arch>.deb, the name dpkg-deb and dpkg-buildpackage would give it.
find_program(IDFORGE_DPKG dpkg)
if(IDFORGE_DPKG)
  execute_process(COMMAND ${IDFORGE_DPKG} --print-architecture
                  OUTPUT_VARIABLE IDFORGE_DEB_ARCH OUTPUT_STRIP_TRAILING_WHITESPACE)
else()
  set(IDFORGE_DEB_ARCH unknown)  # not Debian: `make deb` needs dpkg anyway
endif()
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${IDFORGE_DEB_ARCH})
set(IDFORGE_DEB_NAME idforge_${PROJECT_VERSION}_${IDFORGE_DEB_ARCH}.deb)
set(CPACK_DEBIAN_FILE_NAME ${IDFORGE_DEB_NAME})
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# postinst creates the user with systemd-sysusers, as tomcat10 does in Debian 12.
# procps: /bin/kill, which the unit's ExecReload sends SIGHUP with.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd (>= 238) | systemd-sysusers, procps")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${IDFORGE_PKG_OUT}/conffiles ${IDFORGE_PKG_SRC}/postinst ${IDFORGE_PKG_SRC}/prerm
    ${IDFORGE_PKG_SRC}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

add_custom_target(deb
  COMMAND ${CMAKE_CPACK_COMMAND} --config ${PROJECT_BINARY_DIR}/CPackConfig.cmake -G DEB
  COMMAND ${CMAKE_COMMAND} -E echo "Debian package: ${PROJECT_BINARY_DIR}/${IDFORGE_DEB_NAME}"
  DEPENDS idforge idforge_deb_files
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
  VERBATIM)
