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

# Finds an allocator's library and header (pkg-config module `module` as a hint) into `out_lib`,
# adds the header's directory and VOLCACHE_MALLOC_<define>=1 to volcache_malloc, or stops the
# configuration naming `package`, the Debian package to install.
function(volcache_find_malloc out_lib module library header package define)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(VOLCACHE_${define} QUIET ${module})
  find_library(VOLCACHE_${define}_LIBRARY NAMES ${library} HINTS ${VOLCACHE_${define}_LIBRARY_DIRS})
  find_path(VOLCACHE_${define}_INCLUDE_DIR ${header} HINTS ${VOLCACHE_${define}_INCLUDE_DIRS})
  if(NOT VOLCACHE_${define}_LIBRARY OR NOT VOLCACHE_${define}_INCLUDE_DIR)
    message(FATAL_ERROR "VOLCACHE_MALLOC=${VOLCACHE_MALLOC}: lib${library} or ${header} not found. Install "
                        "${package} (scripts/setup.sh), or configure with -DVOLCACHE_MALLOC=system to use "
                        "glibc's malloc.")
  endif()
  target_include_directories(volcache_malloc INTERFACE "${VOLCACHE_${define}_INCLUDE_DIR}")
  target_compile_definitions(volcache_malloc INTERFACE VOLCACHE_MALLOC_${define}=1)
  set(${out_lib} "${VOLCACHE_${define}_LIBRARY}" PARENT_SCOPE)
endfunction()

add_library(volcache_malloc INTERFACE)
if(VOLCACHE_MALLOC_IN_USE STREQUAL "tcmalloc")
  volcache_find_malloc(lib libtcmalloc_minimal tcmalloc_minimal gperftools/malloc_extension_c.h
                       libgoogle-perftools-dev TCMALLOC)
elseif(VOLCACHE_MALLOC_IN_USE STREQUAL "jemalloc")
  volcache_find_malloc(lib jemalloc jemalloc jemalloc/jemalloc.h libjemalloc-dev JEMALLOC)
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
