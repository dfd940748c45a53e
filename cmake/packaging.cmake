# Packaging (issue 29 items 3 and 4): the Python wheel and the Debian
# packages, both built by the project from this tree.
#
#   cmake --build build --target python-wheel    build/dist/sqllock-*.whl
#   cmake --build build --target deb             build/dist/*.deb (cpack)
#
# scripts/packages.sh OUT makes both in a tree of their own configured
# for /usr (Debian's multiarch library directory), which is what the
# README's install section and CI's package stage use.
#
# The wheel: bindings/python/tools/build_wheel.py (standard library only)
# puts this build's libsqllock into the package; see its docstring.
#
# The Debian packages (CPack's DEB generator, one package per group):
#   libsqllock0      the shared library (component lib), its shlibs
#   libsqllock-dev   headers, the static library, the .so link, the CMake
#                    package and sqllock.pc (component dev); it needs the
#                    drivers' -dev packages, as sqllock.pc requires them
#   sqllock          the tool and its man page (components tool, man)
#   python3-sqllock  the Python package under /usr/lib/python3/dist-
#                    packages (component python), on libsqllock0
# dpkg-shlibdeps works out each binary package's libraries.

set(SQLLOCK_DIST_DIR "${PROJECT_BINARY_DIR}/dist")

find_program(SQLLOCK_WHEEL_PYTHON NAMES python3)
if(SQLLOCK_WHEEL_PYTHON)
  add_custom_target(python-wheel
    COMMAND "${SQLLOCK_WHEEL_PYTHON}"
            "${PROJECT_SOURCE_DIR}/bindings/python/tools/build_wheel.py"
            --lib $<TARGET_FILE:sqllock> --out "${SQLLOCK_DIST_DIR}"
    DEPENDS sqllock
    COMMENT "Writing the sqllock wheel into ${SQLLOCK_DIST_DIR}"
    VERBATIM)
endif()

# The Python package for python3-sqllock: never in a plain install (its
# place depends on the interpreter; pip and the wheel are for that).
install(DIRECTORY "${PROJECT_SOURCE_DIR}/bindings/python/sqllock"
        DESTINATION lib/python3/dist-packages
        COMPONENT python EXCLUDE_FROM_ALL
        FILES_MATCHING PATTERN "*.py" PATTERN "py.typed"
        PATTERN "__pycache__" EXCLUDE)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sqllock)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "sqllock")
set(CPACK_PACKAGE_CONTACT "sqllock developers <sqllock@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "distributed locks on the SQL database you already run")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://example.invalid/sqllock")
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_PACKAGE_DIRECTORY "${SQLLOCK_DIST_DIR}")
set(CPACK_OUTPUT_FILE_PREFIX "${SQLLOCK_DIST_DIR}")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev tool man python)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
set(CPACK_COMPONENT_LIB_GROUP runtime)
set(CPACK_COMPONENT_DEV_GROUP dev)
set(CPACK_COMPONENT_TOOL_GROUP tool)
set(CPACK_COMPONENT_MAN_GROUP tool)
set(CPACK_COMPONENT_PYTHON_GROUP python)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(_v "${PROJECT_VERSION}")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "libsqllock${PROJECT_VERSION_MAJOR}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "distributed locks on PostgreSQL, MySQL/MariaDB and SQLite (library)
 Lease locks with fencing tokens and watchdog renewal, row locks, versioned
 records, semaphores, shared/exclusive locks, fair queues and leader
 election, kept in the application's own database.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libsqllock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libsqllock${PROJECT_VERSION_MAJOR} (= ${_v}), libpq-dev, libsqlite3-dev, default-libmysqlclient-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "distributed locks on PostgreSQL, MySQL/MariaDB and SQLite (development)
 Headers, the static library, pkg-config's sqllock.pc and the CMake
 package (find_package(sqllock)) of libsqllock.")

set(CPACK_DEBIAN_TOOL_PACKAGE_NAME sqllock)
set(CPACK_DEBIAN_TOOL_PACKAGE_SECTION database)
set(CPACK_DEBIAN_TOOL_DESCRIPTION
    "distributed locks on the SQL database you already run (tool)
 sqllock run: a database-backed flock(1) for cron fleets; acquire,
 release, list, reap and init from the shell; the oversell demo.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-sqllock)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
    "libsqllock${PROJECT_VERSION_MAJOR} (>= ${_v}), python3 (>= 3.9)")
set(CPACK_DEBIAN_PYTHON_DESCRIPTION
    "distributed locks on the SQL database you already run (Python 3)
 The sqllock package: import sqllock; one Database shared by threads,
 leases, row locks, records, asyncio; over Debian's libsqllock.")

include(CPack)

add_custom_target(deb
  COMMAND "${CMAKE_CPACK_COMMAND}" -G DEB --config
          "${PROJECT_BINARY_DIR}/CPackConfig.cmake"
  DEPENDS sqllock sqllock_static
  WORKING_DIRECTORY "${PROJECT_BINARY_DIR}"
  COMMENT "Writing the Debian packages into ${SQLLOCK_DIST_DIR}"
  VERBATIM)
if(TARGET sqllock_cli)
  add_dependencies(deb sqllock_cli)
endif()
if(TARGET sqllock_man)
  add_dependencies(deb sqllock_man)
endif()
