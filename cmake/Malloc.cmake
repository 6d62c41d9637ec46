# The allocator linked into the executables (issue 16: the allocation-heavy hot paths, see
# docs/BENCHMARKS.md "The allocator"). VOLCACHE_MALLOC chooses it:
#   tcmalloc  gperftools' tcmalloc_minimal (Debian libgoogle-perftools-dev), the default
#   jemalloc  jemalloc (Debian libjemalloc-dev)
#   system    glibc's malloc
# Sanitizer, fuzz and thread-safety-analysis builds always use the system allocator (the
# sanitizers interpose malloc themselves).
#
# Defines the INTERFACE target volcache_malloc: linking it puts the allocator's shared library
# on the executable's DT_NEEDED list ahead of libc (so its malloc interposes glibc's), and
# defines VOLCACHE_MALLOC_TCMALLOC / VOLCACHE_MALLOC_JEMALLOC / VOLCACHE_MALLOC_SYSTEM for the
# code that asks the allocator for its statistics (bench/workload.cc HeapInUseBytes).
# volcache_link_malloc(<target>...) links it into executables.
set(VOLCACHE_MALLOC "tcmalloc" CACHE STRING "Allocator linked into the executables: tcmalloc, jemalloc or system")
set_property(CACHE VOLCACHE_MALLOC PROPERTY STRINGS tcmalloc jemalloc system)

set(VOLCACHE_MALLOC_IN_USE "${VOLCACHE_MALLOC}")
if(VOLCACHE_SANITIZE OR VOLCACHE_BUILD_FUZZ OR VOLCACHE_THREAD_SAFETY)
  set(VOLCACHE_MALLOC_IN_USE system)
endif()

add_library(volcache_malloc INTERFACE)
if(VOLCACHE_MALLOC_IN_USE STREQUAL "tcmalloc")
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(VOLCACHE_TCMALLOC QUIET libtcmalloc_minimal)
  find_library(VOLCACHE_TCMALLOC_LIBRARY NAMES tcmalloc_minimal HINTS ${VOLCACHE_TCMALLOC_LIBRARY_DIRS})
  find_path(VOLCACHE_TCMALLOC_INCLUDE_DIR gperftools/malloc_extension_c.h HINTS ${VOLCACHE_TCMALLOC_INCLUDE_DIRS})
  if(NOT VOLCACHE_TCMALLOC_LIBRARY OR NOT VOLCACHE_TCMALLOC_INCLUDE_DIR)
    message(FATAL_ERROR "VOLCACHE_MALLOC=tcmalloc: libtcmalloc_minimal or gperftools/malloc_extension_c.h "
                        "not found. Install libgoogle-perftools-dev (scripts/setup.sh), or configure with "
                        "-DVOLCACHE_MALLOC=system to use glibc's malloc.")
  endif()
  set(lib "${VOLCACHE_TCMALLOC_LIBRARY}")
  target_include_directories(volcache_malloc INTERFACE "${VOLCACHE_TCMALLOC_INCLUDE_DIR}")
  target_compile_definitions(volcache_malloc INTERFACE VOLCACHE_MALLOC_TCMALLOC=1)
elseif(VOLCACHE_MALLOC_IN_USE STREQUAL "jemalloc")
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(VOLCACHE_JEMALLOC QUIET jemalloc)
  find_library(VOLCACHE_JEMALLOC_LIBRARY NAMES jemalloc HINTS ${VOLCACHE_JEMALLOC_LIBRARY_DIRS})
  find_path(VOLCACHE_JEMALLOC_INCLUDE_DIR jemalloc/jemalloc.h HINTS ${VOLCACHE_JEMALLOC_INCLUDE_DIRS})
  if(NOT VOLCACHE_JEMALLOC_LIBRARY OR NOT VOLCACHE_JEMALLOC_INCLUDE_DIR)
    message(FATAL_ERROR "VOLCACHE_MALLOC=jemalloc: libjemalloc or jemalloc/jemalloc.h not found. Install "
                        "libjemalloc-dev, or configure with -DVOLCACHE_MALLOC=system to use glibc's malloc.")
  endif()
  set(lib "${VOLCACHE_JEMALLOC_LIBRARY}")
  target_include_directories(volcache_malloc INTERFACE "${VOLCACHE_JEMALLOC_INCLUDE_DIR}")
  target_compile_definitions(volcache_malloc INTERFACE VOLCACHE_MALLOC_JEMALLOC=1)
elseif(VOLCACHE_MALLOC_IN_USE STREQUAL "system")
  set(lib "")
  target_compile_definitions(volcache_malloc INTERFACE VOLCACHE_MALLOC_SYSTEM=1)
else()
  message(FATAL_ERROR "VOLCACHE_MALLOC must be tcmalloc, jemalloc or system (got \"${VOLCACHE_MALLOC}\")")
endif()
if(lib)
  # --no-as-needed: no symbol of the library need be referenced for it to be kept (a test
  # executable calls only malloc/new, which libc also defines).
  target_link_libraries(volcache_malloc INTERFACE "-Wl,--push-state,--no-as-needed" "${lib}" "-Wl,--pop-state")
endif()
unset(lib)
message(STATUS "volcache: allocator ${VOLCACHE_MALLOC_IN_USE} (VOLCACHE_MALLOC=${VOLCACHE_MALLOC})")

function(volcache_link_malloc)
  foreach(target ${ARGN})
    target_link_libraries(${target} PRIVATE volcache_malloc)
  endforeach()
endfunction()
